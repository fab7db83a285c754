//! The `wgllm` command line.
mod batch;
mod bench;
mod bench_batch;
mod bench_op;
mod chat;
mod devices;
mod gate;
mod ops;
mod parity;
mod profile_table;
mod run;
mod sampling_args;
mod serve;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "wgllm",
    version,
    about = "LLM inference on any GPU (WGSL through wgpu), checked op by op against a CPU reference"
)]
pub struct Cli {
    /// More log output on stderr: -v info, -vv debug, -vvv trace (default: warnings and errors;
    /// naga at most info). RUST_LOG (env_logger syntax: `wgpu_core=debug`, `wgllm=debug,naga=debug`)
    /// applies on top
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List every device: name, backend, type, key features and limits
    Devices {
        #[arg(long)]
        json: bool,
    },
    /// The support matrix: op x dtypes x device
    Ops {
        #[arg(long)]
        json: bool,
    },
    /// Decode and prefill throughput for a model directory or a named shape (random weights)
    Bench(bench::BenchArgs),
    /// The golden walker and the model gates (oracle goldens, per-device anchors)
    Gate(gate::GateArgs),
    /// Generate text with a model (default: the embedded tiny Qwen3)
    Run(run::RunArgs),
    /// Offline batch inference: a JSONL file of requests through the serving engine at once
    Batch(batch::BatchArgs),
    /// An OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, /v1/models,
    /// /health, /metrics) on the serving engine
    Serve(serve::ServeArgs),
    /// Chat with a model through its chat template (multi-turn; /reset, /exit; reads stdin)
    Chat(chat::ChatArgs),
    /// Run every parity case on the GPU devices against the CPU reference (or diff two runs)
    Parity(parity::ParityArgs),
}

pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let r = match cli.cmd {
        Cmd::Devices { json } => devices::run(json),
        Cmd::Ops { json } => ops::run(json),
        Cmd::Parity(a) => parity::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Chat(a) => chat::run(a),
        Cmd::Batch(a) => batch::run(a),
        Cmd::Serve(a) => serve::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Gate(a) => gate::run(a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Sends the `log` records of wgllm and its dependencies (wgpu, naga) to stderr: at warn and above
/// by default, one level more per `-v` (naga at most info); `RUST_LOG` directives apply on top (a
/// bare level in it replaces the default, `module=level` sets that module).
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    let mut b = env_logger::Builder::new();
    b.filter_level(level).format_timestamp(None);
    // naga logs every step of every shader translation at debug (thousands of lines per model):
    // it stays at info unless RUST_LOG names it
    b.filter_module("naga", level.min(log::LevelFilter::Info));
    if let Ok(spec) = std::env::var("RUST_LOG") {
        b.parse_filters(&spec);
    }
    // a second initialisation (the CLI entered twice in one process) keeps the first logger
    let _ = b.try_init();
}
