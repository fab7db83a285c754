//! `wgllm bench --op linear --dtype q4_k --m 1 --k 1024 --n 3072`: one op on one device, timed
//! over many dispatches in one submit, with the weight bytes it reads per second (quantized bytes
//! as stored, x and y not counted) against the device's read bandwidth measured in the same run.
//! Weights rotate over enough copies (>= 512 MiB in all, at most 64) to stream from memory rather
//! than from L2.
use super::run::pick_device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::parity::case::Rng;
use clap::Args;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args, Clone, Debug, Default)]
pub struct OpArgs {
    /// Benchmark one op instead of a model: `linear` (w in --dtype, x and y f32)
    #[arg(long)]
    pub op: Option<String>,
    /// linear: rows of x (tokens)
    #[arg(long, default_value_t = 1)]
    pub m: usize,
    /// linear: the reduction length
    #[arg(long, default_value_t = 1024)]
    pub k: usize,
    /// linear: rows of w (outputs)
    #[arg(long, default_value_t = 3072)]
    pub n: usize,
    /// --op: timed dispatches
    #[arg(long, default_value_t = 500)]
    pub iters: usize,
}

/// The weight bytes of a w of `dt` [n, k]: valid random blocks for a quantized type.
fn weight_bytes(dt: DType, n: usize, k: usize) -> Vec<u8> {
    if dt.is_quant() {
        return crate::quant::random_blocks(dt, n * k, 0x5eed);
    }
    let mut r = Rng::new(0x5eed);
    let s = 1.0 / (k as f64).sqrt();
    dt.encode_f32(&(0..n * k).map(|_| (r.normal() * s) as f32).collect::<Vec<_>>())
}

pub fn run(a: &OpArgs, dtype: &str, device: Option<&str>) -> Result<ExitCode> {
    let op = a.op.as_deref().unwrap_or_default();
    if op != "linear" {
        return Err(Error::Other(format!("--op {op}: only `linear` is benchmarked op by op")));
    }
    let wd = DType::parse(dtype).filter(|d| d.is_float() || d.is_quant()).ok_or_else(|| Error::Other(format!("--dtype {dtype}: not a float or quantized dtype")))?;
    let dev = pick_device(device)?;
    let (m, k, n) = (a.m, a.k, a.n);
    let bw = match dev.as_wgpu() {
        Some(w) => Some(w.read_bandwidth(1 << 30, 20)?),
        None => None,
    };
    let wbytes = wd.nbytes(n * k);
    let copies = ((512usize << 20) / wbytes.max(1)).clamp(1, 64);
    let host = weight_bytes(wd, n, k);
    let x = dev.alloc(DType::F32, &[m, k])?;
    let mut r = Rng::new(7);
    dev.upload(&x, &DType::F32.encode_f32(&(0..m * k).map(|_| r.normal() as f32).collect::<Vec<_>>()))?;
    let y = dev.alloc(DType::F32, &[m, n])?;
    let mut ws = Vec::with_capacity(copies);
    for _ in 0..copies {
        let w = dev.alloc(wd, &[n, k])?;
        dev.upload(&w, &host)?;
        ws.push(w);
    }
    // warm up (compile, first touch), then the timed run in one submit
    for w in &ws {
        dev.run(&Op::Linear, &[&x, w], &[&y])?;
    }
    dev.sync()?;
    let t0 = Instant::now();
    for i in 0..a.iters {
        dev.run(&Op::Linear, &[&x, &ws[i % copies]], &[&y])?;
    }
    dev.sync()?;
    let s = t0.elapsed().as_secs_f64() / a.iters.max(1) as f64;
    let gbs = wbytes as f64 / s / 1e9;
    println!("wgllm bench --op linear: M{m} K{k} N{n} w {wd} ({wbytes} bytes, {copies} copies) x/y f32 on {}", dev.name());
    println!("  {:.2} us per op, {:.1} GB/s of weight bytes, {:.2} TFLOP/s", s * 1e6, gbs, 2.0 * (m * k * n) as f64 / s / 1e12);
    if let Some(bw) = bw {
        println!("  read bandwidth (probe, this run): {:.1} GB/s -> {:.1}% of it", bw / 1e9, 100.0 * gbs * 1e9 / bw);
    }
    Ok(ExitCode::SUCCESS)
}
