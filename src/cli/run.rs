//! `wgllm run`: load a model directory (or the embedded default), generate, stream the text.
use crate::backend::pick_device;
use crate::engine::sampler::{Sampler, Sampling};
use crate::engine::Engine;
use crate::error::{Error, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct RunArgs {
    /// A Hugging Face model directory (config.json, *.safetensors, tokenizer.json). Default: the
    /// embedded tiny Qwen3 (random weights: its text is gibberish by design).
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
    /// Tokens to generate
    #[arg(short = 'n', long = "max-tokens", default_value_t = 32)]
    n: usize,
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    #[arg(long, default_value_t = 1.0)]
    top_p: f32,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop when the text contains this (repeatable)
    #[arg(long)]
    stop: Vec<String>,
    /// Keep generating past end-of-sequence tokens
    #[arg(long)]
    ignore_eos: bool,
    /// Context length (KV cache capacity), capped by the model's max_position_embeddings
    #[arg(long, default_value_t = 4096)]
    ctx: usize,
    /// Print one JSON object instead of streaming text
    #[arg(long)]
    json: bool,
    /// With --json: the top-K (id, logprob) pairs of every step
    #[arg(long)]
    logprobs: Option<usize>,
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

fn parse_ids(s: &str) -> Result<Vec<u32>> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u32>()
                .map_err(|_| Error::Other(format!("--tokens: `{t}` is not a token id")))
        })
        .collect()
}

pub fn run(a: RunArgs) -> Result<ExitCode> {
    let dir = match &a.model {
        Some(d) => d.clone(),
        None => crate::model::default::dir()?,
    };
    let dev = pick_device(a.device.as_deref())?;
    let dev_name = dev.name();
    let t0 = Instant::now();
    let mut e = Engine::load(&dir, dev, a.ctx, &mut progress("loading weights"))?;
    let load_s = t0.elapsed().as_secs_f64();
    let tok = e.tokenizer.as_ref();
    let prompt: Vec<u32> = match (&a.prompt, &a.chat, &a.tokens) {
        (_, _, Some(ids)) => parse_ids(ids)?,
        (Some(p), _, _) => tok
            .ok_or_else(|| {
                Error::Other(format!(
                    "{}: no tokenizer.json; give the prompt with --tokens",
                    dir.display()
                ))
            })?
            .encode_prompt(p)?,
        (_, Some(c), _) => {
            let t = tok.ok_or_else(|| {
                Error::Other(format!(
                    "{}: no tokenizer.json; give the prompt with --tokens",
                    dir.display()
                ))
            })?;
            t.encode_prompt(&t.apply_chat(c)?)?
        }
        _ => {
            return Err(Error::Other(
                "give a prompt: --prompt TEXT, --chat TEXT or --tokens IDS".into(),
            ))
        }
    };
    let mut sampler = Sampler::new(Sampling {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        seed: a.seed,
    });
    let want_lp = if a.json { Some(a.logprobs.unwrap_or(0)) } else { None };
    let mut ids: Vec<u32> = Vec::new();
    let mut printed = String::new();
    let mut first_at = None;
    let t1 = Instant::now();
    let stops = a.stop.clone();
    // The tokenizer leaves the engine while generate borrows it mutably.
    let tokenizer = e.tokenizer.take();
    let json = a.json;
    let steps = {
        let mut on_token = |s: &crate::engine::Step| -> bool {
            first_at.get_or_insert_with(Instant::now);
            ids.push(s.token);
            let Some(t) = tokenizer.as_ref() else { return true };
            let Ok(text) = t.decode(&ids) else { return true };
            let stop_hit = stops.iter().filter_map(|st| text.find(st.as_str())).min();
            let visible = match stop_hit {
                Some(i) => &text[..i],
                None => text.as_str(),
            };
            if !json && visible.len() > printed.len() && visible.starts_with(printed.as_str()) {
                print!("{}", &visible[printed.len()..]);
                let _ = std::io::stdout().flush();
                printed = visible.to_string();
            }
            stop_hit.is_none()
        };
        e.generate(&prompt, a.n, &mut sampler, want_lp, !a.ignore_eos, &mut on_token)
    };
    e.tokenizer = tokenizer;
    let steps = steps?;
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
    if a.json {
        let out = serde_json::json!({
            "model": dir.display().to_string(),
            "device": dev_name,
            "prompt_ids": prompt,
            "generated_ids": steps.iter().map(|s| s.token).collect::<Vec<_>>(),
            "text": e.tokenizer.as_ref().and_then(|t| t.decode(&ids).ok()),
            "logprobs": steps.iter().map(|s| s.logprob).collect::<Vec<_>>(),
            "top_logprobs": steps.iter().map(|s| s.top.clone()).collect::<Vec<_>>(),
            "prefill_tokens_per_s": prompt.len() as f64 / prefill_s.max(1e-9),
            "decode_tokens_per_s": decode_tps,
        });
        println!("{}", serde_json::to_string(&out).unwrap());
    } else {
        println!();
        eprintln!(
            "[{dev_name}] loaded in {load_s:.2}s; prompt {} tokens in {:.3}s ({:.1} tok/s); generated {} tokens, decode {:.1} tok/s",
            prompt.len(),
            prefill_s,
            prompt.len() as f64 / prefill_s.max(1e-9),
            steps.len(),
            decode_tps
        );
    }
    Ok(ExitCode::SUCCESS)
}
