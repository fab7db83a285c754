//! The `wgllm` command line.
mod bench;
mod bench_op;
mod devices;
mod gate;
mod ops;
mod parity;
mod run;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "wgllm",
    version,
    about = "LLM inference on any GPU (WGSL through wgpu), checked op by op against a CPU reference"
)]
pub struct Cli {
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
    /// Run every parity case on the GPU devices against the CPU reference (or diff two runs)
    Parity(parity::ParityArgs),
}

pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Devices { json } => devices::run(json),
        Cmd::Ops { json } => ops::run(json),
        Cmd::Parity(a) => parity::run(a),
        Cmd::Run(a) => run::run(a),
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
