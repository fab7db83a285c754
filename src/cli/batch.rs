//! `wgllm batch`: offline batch inference. Every request of a JSONL file goes through the serving
//! engine's scheduler at once; one result a line, in input order.
//!
//! Input, one JSON object a line: `prompt` (text), `messages` (a chat, through the model's
//! template) or `prompt_ids`; optional `id`, `max_tokens` (default 256), `temperature`, `top_p`,
//! `top_k`, `seed`, `stop` (a string or a list), `logprobs` (K: the chosen token's logprob and the
//! top K). Output: `id`, `generated_ids`, `text` (cut before a stop string), `logprobs`,
//! `top_logprobs`, `finish_reason` (stop, eos, length), or `error` for a request the engine refused.
use super::run::{check, progress};
use crate::backend::pick_device;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::stream::StreamDecoder;
use crate::model::tokenizer::{ChatMessage, ChatOptions, Tokenizer};
use crate::serve::{parse_kv_dtype, KvMemory, Request, RequestId, SamplingParams, ServeEngine, ServeOptions};
use clap::Args;
use serde::Deserialize;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct BatchArgs {
    /// A Hugging Face model directory or a .gguf file (or a directory holding one)
    #[arg(long)]
    model: PathBuf,
    /// cpu, wgpu, or wgpu:NAME. Default: the fastest GPU, else cpu
    #[arg(long)]
    device: Option<String>,
    /// Requests, one JSON object a line
    #[arg(long)]
    input: PathBuf,
    /// Results, one JSON object a line in input order
    #[arg(long)]
    output: PathBuf,
    /// The KV cache's dtype: f16, bf16 or f32
    #[arg(long, default_value = "f16")]
    kv_dtype: String,
    /// The KV pool's bytes ("4GiB", "512MiB", "1000000")
    #[arg(long, default_value = "2GiB")]
    kv_memory: String,
    /// Sequences running at once (>= 1)
    #[arg(long, default_value_t = 64, value_parser = check::int_at_least("--max-seqs", 1))]
    max_seqs: usize,
    /// Tokens one step feeds at most (>= 1)
    #[arg(long, default_value_t = 2048, value_parser = check::int_at_least("--max-batch-tokens", 1))]
    max_batch_tokens: usize,
    /// Context length of a sequence (>= 2), capped by the model's max_position_embeddings
    #[arg(long, default_value_t = 4096, value_parser = check::int_at_least("--ctx", 2))]
    ctx: usize,
    /// Turn the prefix cache off
    #[arg(long)]
    no_prefix_cache: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    id: Option<serde_json::Value>,
    prompt: Option<String>,
    messages: Option<Vec<ChatMessage>>,
    prompt_ids: Option<Vec<u32>>,
    max_tokens: Option<usize>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    top_k: Option<usize>,
    seed: Option<u64>,
    stop: Option<Stop>,
    logprobs: Option<usize>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

/// One request's results as they come.
struct Out {
    id: serde_json::Value,
    ids: Vec<u32>,
    logprobs: Vec<Option<f64>>,
    top: Vec<Vec<(u32, f64)>>,
    stream: StreamDecoder,
    finish: Option<&'static str>,
    error: Option<String>,
}

/// Reads and checks every line before any weights load; a bad line is refused with its number.
fn read_lines(path: &PathBuf) -> Result<Vec<Line>> {
    let f = std::fs::File::open(path).map_err(|e| Error::File {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    let mut v = Vec::new();
    for (i, l) in std::io::BufReader::new(f).lines().enumerate() {
        let at = |d: String| Error::File {
            path: format!("{}:{}", path.display(), i + 1),
            detail: d,
        };
        let l = l.map_err(|e| at(e.to_string()))?;
        if l.trim().is_empty() {
            continue;
        }
        let line: Line = serde_json::from_str(&l).map_err(|e| at(format!("not a request: {e}")))?;
        let given = [
            line.prompt.is_some(),
            line.messages.is_some(),
            line.prompt_ids.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(at("give exactly one of prompt, messages, prompt_ids".into()));
        }
        if let Some(t) = line.temperature {
            check::temperature(&t.to_string()).map_err(at)?;
        }
        if let Some(p) = line.top_p {
            check::top_p(&p.to_string()).map_err(at)?;
        }
        if line.max_tokens == Some(0) {
            return Err(at("max_tokens must be >= 1".into()));
        }
        v.push(line);
    }
    if v.is_empty() {
        return Err(Error::File {
            path: path.display().to_string(),
            detail: "no request in it".into(),
        });
    }
    Ok(v)
}

fn prompt_ids(line: &Line, tok: Option<&Tokenizer>, what: &str, ctx: usize) -> Result<Vec<u32>> {
    if let Some(ids) = &line.prompt_ids {
        return Ok(ids.clone());
    }
    let tok = tok.ok_or_else(|| Error::Other(format!("{what}: the model has no tokenizer; give prompt_ids")))?;
    match (&line.prompt, &line.messages) {
        (Some(p), _) => tok.encode_prompt_max(p, ctx),
        (_, Some(m)) => {
            let opts = ChatOptions {
                add_generation_prompt: true,
                ..ChatOptions::default()
            };
            tok.encode_prompt_max(&tok.apply_chat_template(m, &opts)?, ctx)
        }
        _ => unreachable!("checked in read_lines"),
    }
}

pub fn run(a: BatchArgs) -> Result<ExitCode> {
    let lines = read_lines(&a.input)?;
    let opts = ServeOptions {
        kv_dtype: parse_kv_dtype(&a.kv_dtype)?,
        kv_memory: KvMemory::parse(&a.kv_memory).map_err(|e| Error::Other(format!("--kv-memory: {e}")))?,
        max_seqs: a.max_seqs,
        max_batch_tokens: a.max_batch_tokens,
        prefix_caching: if a.no_prefix_cache { Some(false) } else { None },
        ..ServeOptions::default()
    };
    let dir = check::model(&a.model, lines.iter().any(|l| l.prompt_ids.is_none()))?;
    let mut out_file = std::fs::File::create(&a.output).map_err(|e| Error::File {
        path: a.output.display().to_string(),
        detail: e.to_string(),
    })?;
    let dev = pick_device(a.device.as_deref())?;
    let e = Engine::load(&dir, dev, a.ctx, &mut progress("loading weights"))?;
    let dev_name = e.dev.name();
    let mut s = ServeEngine::new(e, &opts)?;
    let tok = s.engine.tokenizer.take();
    let mut outs = Vec::with_capacity(lines.len());
    let mut prompt_tokens = 0;
    for (i, line) in lines.iter().enumerate() {
        let id = line.id.clone().unwrap_or(serde_json::json!(i));
        let stops = match &line.stop {
            None => vec![],
            Some(Stop::One(s)) => vec![s.clone()],
            Some(Stop::Many(v)) => v.clone(),
        };
        let mut out = Out {
            id,
            ids: vec![],
            logprobs: vec![],
            top: vec![],
            stream: StreamDecoder::new(&stops),
            finish: None,
            error: None,
        };
        let added = prompt_ids(line, tok.as_ref(), &format!("request {i}"), a.ctx).and_then(|ids| {
            prompt_tokens += ids.len();
            s.add(Request {
                id: RequestId(i as u64),
                prompt: ids,
                max_tokens: line.max_tokens.unwrap_or(256),
                stop_token_ids: vec![],
                sampling: SamplingParams {
                    temperature: line.temperature.unwrap_or(0.0),
                    top_k: line.top_k.unwrap_or(0),
                    top_p: line.top_p.unwrap_or(1.0),
                    seed: line.seed.unwrap_or(0),
                    logprobs: line.logprobs,
                },
            })
        });
        if let Err(err) = added {
            out.error = Some(err.to_string());
        }
        outs.push(out);
    }
    let total = outs.iter().filter(|o| o.error.is_none()).count();
    let tty = std::io::stderr().is_terminal();
    let t0 = Instant::now();
    let (mut done, mut generated) = (0, 0usize);
    while !s.is_idle() {
        for ev in s.step()? {
            let o = &mut outs[ev.id.0 as usize];
            generated += 1;
            o.ids.push(ev.token);
            o.logprobs.push(ev.logprob);
            o.top.push(ev.top);
            if let Some(t) = &tok {
                o.stream.push(t, ev.token)?;
            }
            if let Some(f) = ev.finish {
                o.finish = Some(f.as_str());
                done += 1;
            } else if o.stream.stopped() {
                s.abort(ev.id);
                o.finish = Some("stop");
                done += 1;
            }
        }
        if tty {
            let tps = generated as f64 / t0.elapsed().as_secs_f64().max(1e-9);
            eprint!("\r{done}/{total} requests, {generated} tokens, {tps:.1} tokens/s   ");
        }
    }
    if tty {
        eprintln!();
    }
    let secs = t0.elapsed().as_secs_f64();
    for o in &mut outs {
        let line = match &o.error {
            Some(err) => serde_json::json!({"id": o.id, "error": err}),
            None => {
                o.stream.finish();
                serde_json::json!({
                    "id": o.id,
                    "generated_ids": o.ids,
                    "text": tok.as_ref().map(|_| o.stream.text()),
                    "logprobs": o.logprobs,
                    "top_logprobs": o.top,
                    "finish_reason": o.finish,
                })
            }
        };
        writeln!(out_file, "{}", serde_json::to_string(&line).unwrap()).map_err(|e| Error::File {
            path: a.output.display().to_string(),
            detail: e.to_string(),
        })?;
    }
    let st = s.stats();
    let (steps, fed) = s.counters();
    eprintln!(
        "[{dev_name}] {total} requests ({} refused), {prompt_tokens} prompt tokens, {generated} generated in {secs:.2}s: \
         {:.1} generated tokens/s, {:.1} tokens/s fed; {steps} steps, {} preemptions, prefix cache {} hits / {} misses",
        outs.len() - total,
        generated as f64 / secs.max(1e-9),
        fed as f64 / secs.max(1e-9),
        st.preemptions,
        st.prefix_hits,
        st.prefix_misses
    );
    Ok(ExitCode::SUCCESS)
}
