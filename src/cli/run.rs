//! `wgllm run`: load a model directory (or the embedded default), submit the prompt as one request
//! to the serving engine, stream the text as the tokens come.
use super::sampling_args::SamplingArgs;
use crate::backend::pick_device;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::stream::StreamDecoder;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

pub mod check;
mod generate;

#[derive(Args)]
pub struct RunArgs {
    /// A Hugging Face model directory (config.json, *.safetensors, tokenizer.json), a .gguf file,
    /// or a directory holding one .gguf. Default: the embedded tiny Qwen3 (random weights: its
    /// text is gibberish by design).
    #[arg(long)]
    model: Option<PathBuf>,
    /// cpu, wgpu, or wgpu:NAME. Default: the fastest GPU, else cpu (`wgllm devices` marks it).
    #[arg(long)]
    device: Option<String>,
    /// Raw text prompt
    #[arg(long, conflicts_with_all = ["chat", "tokens"])]
    prompt: Option<String>,
    /// One user message, through the model's chat template
    #[arg(long, conflicts_with = "tokens")]
    chat: Option<String>,
    /// Prompt as token ids, comma or space separated (works without tokenizer.json)
    #[arg(long)]
    tokens: Option<String>,
    /// Tokens to generate (>= 1); more than the context holds generates until it is full
    #[arg(short = 'n', long = "max-tokens", default_value_t = 32, allow_negative_numbers = true,
          value_parser = check::int_at_least("-n/--max-tokens", 1))]
    n: usize,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Stop when the text contains this (repeatable); the text ends before it
    #[arg(long)]
    stop: Vec<String>,
    /// Keep generating past end-of-sequence tokens
    #[arg(long)]
    ignore_eos: bool,
    /// Context length (KV cache capacity, >= 1), capped by the model's max_position_embeddings
    #[arg(long, default_value_t = 4096, allow_negative_numbers = true, value_parser = check::int_at_least("--ctx", 1))]
    ctx: usize,
    /// Print one JSON object instead of streaming text
    #[arg(long)]
    json: bool,
    /// With --json: the top-K (id, logprob) pairs of every step (K >= 0)
    #[arg(long, allow_negative_numbers = true, value_parser = check::int_at_least("--logprobs", 0))]
    logprobs: Option<usize>,
}

/// Feeds `token` to `stream` and prints the text it completes (nothing with --json); false, with the
/// error kept in `failed`, when the tokenizer cannot decode it.
pub fn print_piece(
    stream: &mut StreamDecoder,
    tok: &crate::model::tokenizer::Tokenizer,
    token: u32,
    json: bool,
    failed: &mut Option<Error>,
) -> bool {
    match stream.push(tok, token) {
        Ok(piece) => {
            if !json && !piece.is_empty() {
                print!("{piece}");
                let _ = std::io::stdout().flush();
            }
            true
        }
        Err(err) => {
            *failed = Some(err);
            false
        }
    }
}

/// A progress bar on stderr when it is a terminal; one line at the end otherwise.
pub fn progress(label: &str) -> impl FnMut(usize, usize) + '_ {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    move |done, total| {
        if !tty {
            if done == total {
                eprintln!("{label}: {total} tensors");
            }
            return;
        }
        let w = 30;
        let f = done * w / total.max(1);
        eprint!("\r{label} [{}{}] {done}/{total}", "=".repeat(f), " ".repeat(w - f));
        if done == total {
            eprintln!();
        }
    }
}

/// Why generation ended: a stop string, an end-of-sequence token, or the token budget (`-n` or the
/// context, whichever came first).
fn finish_reason(stopped: bool, eos_hit: bool) -> &'static str {
    if stopped {
        "stop"
    } else if eos_hit {
        "eos"
    } else {
        "length"
    }
}

pub fn run(a: RunArgs) -> Result<ExitCode> {
    // Everything that can be checked without the weights is checked first.
    let source = check::flags(&a.prompt, &a.chat, &a.tokens, &a.stop, a.json, a.logprobs)?;
    let dir = match &a.model {
        Some(d) => check::model(d, !matches!(source, check::Prompt::Ids(_)))?,
        None => crate::model::default::dir()?,
    };
    let dev = pick_device(a.device.as_deref())?;
    let dev_name = dev.name();
    let t0 = Instant::now();
    let mut e = Engine::load(&dir, dev, a.ctx, &mut progress("loading weights"))?;
    let load_s = t0.elapsed().as_secs_f64();
    let no_tok = || {
        Error::Other(format!(
            "{}: no tokenizer (no tokenizer.json / tokenizer.ggml metadata); give the prompt with --tokens",
            dir.display()
        ))
    };
    let prompt: Vec<u32> = match &source {
        check::Prompt::Ids(ids) => ids.clone(),
        // (refused before tokenizing when surely longer than the context: issue 21)
        check::Prompt::Text(p) => e
            .tokenizer
            .as_ref()
            .ok_or_else(no_tok)?
            .encode_prompt_max(p, e.max_ctx)?,
        check::Prompt::Chat(c) => {
            let t = e.tokenizer.as_ref().ok_or_else(no_tok)?;
            t.encode_prompt_max(&t.apply_chat(c)?, e.max_ctx)?
        }
    };
    let (n, ctx_full) = check::fit(a.n, prompt.len(), e.max_ctx, a.ctx)?;
    if ctx_full {
        eprintln!(
            "note: -n {} does not fit: the context holds {} tokens and the prompt takes {}; generating at most {n} \
             (finish reason \"length\" when the context is full)",
            a.n,
            e.max_ctx,
            prompt.len()
        );
    }
    let want_lp = if a.json { Some(a.logprobs.unwrap_or(0)) } else { None };
    // The tokenizer leaves the engine, which generation consumes, to decode the stream.
    let tokenizer = e.tokenizer.take();
    let mut out = generate::Streamer::new(tokenizer.as_ref(), &a.stop, a.json);
    let g = generate::generate(e, &prompt, n, &a.sampling, want_lp, a.ignore_eos, &mut out)?;
    let (steps, mut stream, t1, first_at) = (g.steps, out.stream, out.started, out.first_at);
    let t_end = Instant::now();
    let first = first_at.unwrap_or(t_end);
    let prefill_s = (first - t1).as_secs_f64();
    let decode_n = steps.len().saturating_sub(1);
    let decode_s = (t_end - first).as_secs_f64();
    let decode_tps = if decode_n > 0 && decode_s > 0.0 {
        decode_n as f64 / decode_s
    } else {
        0.0
    };
    let rest = stream.finish();
    let reason = finish_reason(stream.stopped(), g.eos_hit);
    if a.json {
        let out = serde_json::json!({
            "model": dir.display().to_string(),
            "device": dev_name,
            "prompt_ids": prompt,
            "generated_ids": steps.iter().map(|s| s.token).collect::<Vec<_>>(),
            "text": tokenizer.as_ref().map(|_| stream.text()),
            "finish_reason": reason,
            "context_full": ctx_full && reason == "length" && steps.len() == n,
            "logprobs": steps.iter().map(|s| s.logprob).collect::<Vec<_>>(),
            "top_logprobs": steps.iter().map(|s| s.top.clone()).collect::<Vec<_>>(),
            "prefill_tokens_per_s": prompt.len() as f64 / prefill_s.max(1e-9),
            "decode_tokens_per_s": decode_tps,
        });
        println!("{}", serde_json::to_string(&out).unwrap());
    } else {
        println!("{rest}");
        let full = if ctx_full && reason == "length" && steps.len() == n {
            " (the context is full)"
        } else {
            ""
        };
        eprintln!(
            "[{dev_name}] loaded in {load_s:.2}s; prompt {} tokens in {:.3}s ({:.1} tok/s); generated {} tokens, decode {:.1} tok/s; finish: {reason}{full}",
            prompt.len(),
            prefill_s,
            prompt.len() as f64 / prefill_s.max(1e-9),
            steps.len(),
            decode_tps
        );
    }
    Ok(ExitCode::SUCCESS)
}
