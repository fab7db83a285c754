//! `wgllm bench --op linear --dtype q4_k --m 1 --k 1024 --n 3072`: one op on one device, timed
//! as the GPU time of many dispatches in one submit (recorded before the clock starts), with the
//! weight bytes it reads per second (quantized bytes as stored, x and y not counted) against the
//! device's read bandwidth measured in the same run, and beside a plain read of the same bytes
//! (the probe's kernels over the same copies, dispatch after dispatch: what launch, ramp and tail
//! leave of the bandwidth at that size).
//! Weights rotate over enough copies (>= 512 MiB in all, at most 64) to stream from memory rather
//! than from L2.
use crate::backend::pick_device;
use crate::backend::{Backend, Capability, Support};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::Op;
use crate::util::Rng;
use clap::Args;
use std::process::ExitCode;
use std::time::Instant;

/// Timed dispatches at most: they stay one submit (the recorder submits at 2048).
const MAX_ITERS: usize = 1000;

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
    /// --op: timed dispatches (at most 1000: one submit)
    #[arg(long, default_value_t = 500)]
    pub iters: usize,
    /// --op: weight copies rotated over (default: enough for >= 512 MiB, at most 64)
    #[arg(long)]
    pub copies: Option<usize>,
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
        return Err(Error::Other(format!(
            "--op {op}: only `linear` is benchmarked op by op"
        )));
    }
    let wd = DType::parse(dtype)
        .filter(|d| d.is_float() || d.is_quant())
        .ok_or_else(|| Error::Other(format!("--dtype {dtype}: not a float or quantized dtype")))?;
    let dev = pick_device(device)?;
    let (m, k, n) = (a.m, a.k, a.n);
    let bw = match dev.capability(Capability::BandwidthProbe) {
        Support::Yes => Some(dev.read_bandwidth(1 << 30, 20)?),
        Support::No(_) => None,
    };
    let wbytes = wd.nbytes(n * k);
    let copies = a.copies.unwrap_or((512usize << 20) / wbytes.max(1)).clamp(1, 64);
    let host = weight_bytes(wd, n, k);
    let x = dev.alloc(DType::F32, &[m, k])?;
    let mut r = Rng::new(7);
    dev.upload(
        &x,
        &DType::F32.encode_f32(&(0..m * k).map(|_| r.normal() as f32).collect::<Vec<_>>()),
    )?;
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
    // A GPU device records the dispatches (host work, timed apart) and the clock then runs over
    // their submit and completion: the GPU time of `iters` back-to-back dispatches. A host device
    // computes in `run`, so its clock covers the loop.
    let iters = a.iters.clamp(1, MAX_ITERS);
    let deferred = dev.capability(Capability::PipelinedDecode).is_yes();
    let t0 = Instant::now();
    for i in 0..iters {
        dev.run(&Op::Linear, &[&x, &ws[i % copies]], &[&y])?;
    }
    let t1 = Instant::now();
    dev.sync()?;
    let s = (if deferred { t1.elapsed() } else { t0.elapsed() }).as_secs_f64() / iters as f64;
    let gbs = wbytes as f64 / s / 1e9;
    println!(
        "wgllm bench --op linear: M{m} K{k} N{n} w {wd} ({wbytes} bytes, {copies} copies) x/y f32 on {}",
        dev.name()
    );
    println!(
        "  {:.2} us per op, {:.1} GB/s of weight bytes, {:.2} TFLOP/s",
        s * 1e6,
        gbs,
        2.0 * (m * k * n) as f64 / s / 1e12
    );
    if deferred {
        let r = (t1 - t0).as_secs_f64() / iters as f64;
        println!("  (GPU time: {iters} dispatches recorded first, {:.2} us per op of host recording not counted; recording plus GPU run one after the other: {:.2} us per op)", r * 1e6, (r + s) * 1e6);
    }
    if let Some(bw) = bw {
        println!(
            "  read bandwidth (probe, this run): {:.1} GB/s -> {:.1}% of it",
            bw / 1e9,
            100.0 * gbs * 1e9 / bw
        );
    }
    if let Some((k, parts)) = kernel_time(dev.as_ref(), iters, &mut |i| {
        dev.run(&Op::Linear, &[&x, &ws[i % copies]], &[&y])
    })? {
        let kgbs = wbytes as f64 / k / 1e9;
        print!(
            "  kernel time alone (timestamp queries, a pass a dispatch): {:.2} us per op, {kgbs:.1} GB/s",
            k * 1e6
        );
        match bw {
            Some(bw) => println!(" -> {:.1}% of the probe", 100.0 * kgbs * 1e9 / bw),
            None => println!(),
        }
        if parts.len() > 1 {
            let each: Vec<String> = parts.iter().map(|(e, t)| format!("{e} {:.2} us", t * 1e6)).collect();
            println!("  its dispatches: {}", each.join(", "));
        }
    }
    drop(ws);
    if let Some(bw) = bw {
        dev.forget_bind_groups();
        // the same bytes read by the probe's plain kernels, same copies, dispatch after dispatch:
        // what launch, ramp and tail leave of the bandwidth at this size
        let sized = dev.read_bandwidth_sized(wbytes, copies, iters)?;
        println!("  plain read of the same bytes ({copies} copies, back to back): {:.1} GB/s, {:.1}% of the probe -> the op at {:.1}% of it", sized / 1e9, 100.0 * sized / bw, 100.0 * gbs * 1e9 / sized);
    }
    Ok(ExitCode::SUCCESS)
}

/// Mean GPU time of one op from timestamp queries (its dispatches alone, without the barriers
/// and launches between dispatches), over `iters` runs of `run`, with each entry point's share;
/// None where the device has no timestamp queries.
fn kernel_time(
    dev: &dyn Backend,
    iters: usize,
    run: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<Option<(f64, Vec<(String, f64)>)>> {
    if !dev.capability(Capability::Timestamps).is_yes() {
        return Ok(None);
    }
    dev.set_profiling(true)?;
    for i in 0..iters {
        run(i)?;
    }
    dev.sync()?;
    let rows = dev.profile();
    dev.set_profiling(false)?;
    // every dispatch of the op (a pre-pass too) over the op's runs
    let (ns, n) = rows.iter().fold((0.0, 0u64), |a, r| (a.0 + r.ns, a.1 + r.dispatches));
    let parts = rows
        .iter()
        .map(|r| (r.kernel.clone(), r.ns / iters as f64 / 1e9))
        .collect();
    Ok((n > 0).then(|| (ns / iters as f64 / 1e9, parts)))
}
