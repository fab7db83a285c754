//! `wgllm serve`: the OpenAI-compatible HTTP server (src/server/). Flags are checked here, before
//! any weights load; the server binds, then loads the model on the engine thread.
use super::run::check;
use crate::error::{Error, Result};
use crate::serve::{parse_kv_dtype, KvMemory, ServeOptions};
use crate::server::{LoadSpec, ServerConfig};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct ServeArgs {
    /// A Hugging Face model directory or a .gguf file (or a directory holding one). Default: the
    /// embedded tiny Qwen3 (random weights: gibberish by design, for tests)
    #[arg(long)]
    model: Option<PathBuf>,
    /// cpu, wgpu, or wgpu:NAME. Default: the fastest GPU, else cpu
    #[arg(long)]
    device: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// 0: any free port (the "listening on" line on stderr says which)
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Require `Authorization: Bearer KEY` on /v1/* (default: none)
    #[arg(long)]
    api_key: Option<String>,
    /// The model name clients send and /v1/models lists. Default: the model file or directory name
    #[arg(long)]
    served_model_name: Option<String>,
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
    /// Sequences that may wait beyond the running ones; more are refused with 429
    #[arg(long, default_value_t = 256, value_parser = check::int_at_least("--max-queue", 0))]
    max_queue: usize,
    /// Context length of a sequence (>= 2), capped by the model's max_position_embeddings
    #[arg(long, default_value_t = 4096, value_parser = check::int_at_least("--ctx", 2))]
    ctx: usize,
    /// Turn the prefix cache off
    #[arg(long)]
    no_prefix_cache: bool,
    /// Largest request body in bytes; larger ones get 413
    #[arg(long, default_value_t = 4 << 20, value_parser = check::int_at_least("--max-body-bytes", 1))]
    max_body_bytes: usize,
    /// Seconds in-flight requests may take to finish after SIGINT/SIGTERM before they are aborted
    #[arg(long, default_value_t = 30, value_parser = check::int_at_least("--shutdown-grace", 0))]
    shutdown_grace: usize,
}

pub fn run(a: ServeArgs) -> Result<ExitCode> {
    let opts = ServeOptions {
        kv_dtype: parse_kv_dtype(&a.kv_dtype)?,
        kv_memory: KvMemory::parse(&a.kv_memory).map_err(|e| Error::Other(format!("--kv-memory: {e}")))?,
        max_seqs: a.max_seqs,
        max_batch_tokens: a.max_batch_tokens,
        prefix_caching: if a.no_prefix_cache { Some(false) } else { None },
        ..ServeOptions::default()
    };
    let (model, default_name) = match &a.model {
        Some(p) => {
            let dir = check::model(p, false)?;
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().trim_end_matches(".gguf").to_string())
                .unwrap_or_else(|| "model".into());
            (dir, name)
        }
        None => (crate::model::default::dir()?, "wgllm-tiny".to_string()),
    };
    if a.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(Error::Other("--api-key: must not be empty".into()));
    }
    let cfg = ServerConfig {
        host: a.host,
        port: a.port,
        api_key: a.api_key,
        served_model_name: a.served_model_name.unwrap_or(default_name),
        max_queue: a.max_queue,
        max_seqs: a.max_seqs,
        max_body_bytes: a.max_body_bytes,
        shutdown_grace: Duration::from_secs(a.shutdown_grace as u64),
    };
    let spec = LoadSpec {
        model,
        device: a.device,
        ctx: a.ctx,
    };
    crate::server::run(cfg, spec, opts)?;
    Ok(ExitCode::SUCCESS)
}
