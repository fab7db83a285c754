//! `wgllm bench`: decode tokens/s at batch 1 and prefill tokens/s for a model directory or a named
//! shape with random weights, with the bytes each decoded token reads and the fraction of the
//! device's read bandwidth measured in the same run. `--profile` adds GPU time per kernel.
use super::run::progress;
use crate::backend::pick_device;
use crate::backend::{Capability, Support};
use crate::dtype::DType;
use crate::engine::sampler::{Sampler, Sampling};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::shapes;
use crate::model::{Logits, Mix};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// A model directory
    #[arg(long, conflicts_with = "shape")]
    model: Option<PathBuf>,
    /// A named shape with random weights: qwen3-0.6b, qwen3.5-0.8b
    #[arg(long)]
    shape: Option<String>,
    /// Weight dtype for --shape (bf16, f16, f32)
    #[arg(long, default_value = "bf16")]
    dtype: String,
    /// Block-quantized weights for --shape (q8_0, q4_0, q4_1, q4_k, q6_k, iq4_nl): every matrix
    /// and the embedding quantized, norms f32 (as in GGUF files); or q4_k_m: q4_k with the types
    /// llama.cpp's q4_k_m files keep in q6_k (the output matrix, and attn_v and ffn_down of the
    /// first and last eighth of the layers and every third between)
    #[arg(long, conflicts_with = "model")]
    quant: Option<String>,
    #[arg(long)]
    device: Option<String>,
    /// Decode steps a timed run (three runs after at least a second of warm-up runs; their mean)
    #[arg(long, default_value_t = 128)]
    decode: usize,
    /// Prefill lengths to time (three runs each after an untimed one; their mean)
    #[arg(long, value_delimiter = ',', default_value = "512,2048")]
    prefill: Vec<usize>,
    /// Tokens already in the cache when each prefill is timed (llama-bench's -d): a chat's next
    /// turn, whose attention walks the cached keys as well as its own
    #[arg(long, default_value_t = 0, conflicts_with = "batch")]
    depth: usize,
    /// Also report GPU time per kernel (timestamp queries) for one decode step and one prefill (of
    /// the longest --prefill length)
    #[arg(long)]
    profile: bool,
    #[arg(long)]
    json: Option<PathBuf>,
    /// Serving throughput per batch size instead (the scheduler, paged KV): e.g. 1,8,32,64
    #[arg(long, value_delimiter = ',')]
    batch: Vec<usize>,
    /// With --batch: prompt tokens of each request
    #[arg(long, default_value_t = 128)]
    prompt_len: usize,
    /// With --batch: tokens each request generates
    #[arg(long, default_value_t = 128)]
    gen_len: usize,
    /// With --batch: the KV cache's dtype (f16, bf16, f32)
    #[arg(long, default_value = "f16")]
    kv_dtype: String,
    /// With --batch: a batch of 1 runs as `wgllm run` runs its one request (the single-stream
    /// kernels, whose order of sums depends on the step's rows: nothing else shares its steps)
    #[arg(long)]
    as_run: bool,
    #[command(flatten)]
    op: super::bench_op::OpArgs,
}

/// Timed decode runs (`--decode` steps each) whose mean `bench` reports, as llama-bench's `-r 3`.
const DECODE_REPS: usize = 3;
/// Timed prefills of each length, after one untimed, likewise (each after its own `--depth` fill).
const PREFILL_REPS: usize = 3;
/// Seconds of untimed decode runs before them (at least two runs) ...
const WARM_S: f64 = 1.0;
/// ... and until two warm-up runs in a row agree within this fraction, or WARM_MAX_S: a GPU that
/// sat idle can take longer than WARM_S to reach its clocks, and the timed runs then climb.
const WARM_AGREE: f64 = 0.02;
const WARM_MAX_S: f64 = 10.0;
/// The timed decode runs reported are the last DECODE_REPS once they agree within this fraction
/// (their spread, max - min, over their mean), with at most STEADY_MAX_EXTRA more runs timed
/// before them: a GPU's clocks can still move after a steady warm-up, and a mean over runs that
/// climb would be no figure of the code.
const STEADY_AGREE: f64 = 0.03;
const STEADY_MAX_EXTRA: usize = 12;

pub fn run(a: BenchArgs) -> Result<ExitCode> {
    if a.op.op.is_some() {
        return super::bench_op::run(&a.op, &a.dtype, a.device.as_deref());
    }
    let dev = pick_device(a.device.as_deref())?;
    let dev_name = dev.name();
    let bw = match dev.capability(Capability::BandwidthProbe) {
        Support::Yes => Some(dev.read_bandwidth(1 << 30, 20)?),
        Support::No(_) => None,
    };
    let max_prefill = a.prefill.iter().copied().max().unwrap_or(0);
    let ctx = match a.batch.is_empty() {
        true => (a.depth + max_prefill + 16).max(a.decode + 64),
        false => a.prompt_len + a.gen_len + 16,
    };
    let (mut e, label) = match (&a.model, &a.shape) {
        (Some(d), _) => (
            Engine::load(d, dev, ctx, &mut progress("loading weights"))?,
            d.display().to_string(),
        ),
        (None, Some(s)) => {
            let cfg = shapes::shape(s)
                .ok_or_else(|| Error::Other(format!("unknown shape `{s}` (known: {})", shapes::NAMES.join(", "))))?;
            let (dt, mix) = match a.quant.as_deref() {
                Some("q4_k_m") => (DType::Q4K, Mix::Q4KM),
                Some(q) => (
                    DType::parse(q).filter(|d| d.is_quant()).ok_or_else(|| {
                        Error::Other(format!(
                            "--quant {q}: not a quantized type (q8_0, q4_0, q4_1, q4_k, q6_k, iq4_nl, q4_k_m)"
                        ))
                    })?,
                    Mix::Uniform,
                ),
                None => (
                    DType::parse(&a.dtype)
                        .filter(|d| d.is_float())
                        .ok_or_else(|| Error::Other(format!("--dtype {}: not a float dtype", a.dtype)))?,
                    Mix::Uniform,
                ),
            };
            let types = match mix {
                Mix::Uniform => dt.to_string(),
                Mix::Q4KM => "q4_k_m: q4_k and q6_k".into(),
            };
            (
                Engine::random(cfg, dt, mix, dev, ctx, &mut progress("random weights"))?,
                format!("{s} ({types}, random weights)"),
            )
        }
        _ => return Err(Error::Other("give --model DIR or --shape NAME".into())),
    };
    if !a.batch.is_empty() {
        println!("wgllm bench --batch: {label} on {dev_name}");
        if let Some(bw) = bw {
            println!("  read bandwidth (probe, this run): {:.1} GB/s", bw / 1e9);
        }
        let b = super::bench_batch::BatchBench {
            batches: a.batch.clone(),
            prompt_len: a.prompt_len,
            gen_len: a.gen_len,
            kv_dtype: crate::serve::parse_kv_dtype(&a.kv_dtype)?,
            profile: a.profile,
            as_run: a.as_run,
        };
        let rows = super::bench_batch::run(e, &b, bw)?;
        let out = json!({"model": label, "device": dev_name, "read_bandwidth_gbs": bw.map(|b| b / 1e9), "batch": rows});
        if let Some(p) = &a.json {
            std::fs::write(p, serde_json::to_string_pretty(&out).unwrap()).map_err(|er| Error::File {
                path: p.display().to_string(),
                detail: er.to_string(),
            })?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let c = e.cfg.clone();
    let v = c.vocab_size as u64;
    let ids =
        |n: usize, salt: u64| -> Vec<u32> { (0..n as u64).map(|i| ((i * 2654435761 + salt) % v) as u32).collect() };
    let mut sampler = Sampler::new(Sampling::default());
    // Decode: 16-token prompt, 8 warm-up steps, then `decode` timed steps (each: forward + argmax + 4-byte read-back).
    let mut cache = e.new_cache()?;
    let prompt = ids(16, 7);
    e.forward(&mut cache, &prompt, Logits::Last, &mut |_, _, _| Ok(()))?;
    let mut tok = e.choose(16, &mut sampler, None)?.token;
    for _ in 0..8 {
        e.forward(&mut cache, &[tok], Logits::Last, &mut |_, _, _| Ok(()))?;
        tok = e.choose(1, &mut sampler, None)?.token;
    }
    // CPU cost of recording one step and of submitting it, then the wait for its token (about the
    // device's time for the step: it starts at the submit), in a synchronous loop of 16 steps
    let (mut record_s, mut submit_s, mut wait_s) = (0.0, 0.0, 0.0);
    for _ in 0..16 {
        let tr = Instant::now();
        e.forward(&mut cache, &[tok], Logits::Last, &mut |_, _, _| Ok(()))?;
        record_s += tr.elapsed().as_secs_f64();
        let ts = Instant::now();
        e.dev.flush()?;
        submit_s += ts.elapsed().as_secs_f64();
        let tw = Instant::now();
        tok = e.choose(1, &mut sampler, None)?.token;
        wait_s += tw.elapsed().as_secs_f64();
    }
    let ms = |s: f64| 1e3 * s / 16.0;
    let (record_ms, submit_ms, wait_ms) = (ms(record_s), ms(submit_s), ms(wait_s));
    // The timed decode is the engine's own generate loop (pipelined on wgpu), timed as
    // llama-bench times its tg runs: warm-up runs first, then DECODE_REPS runs, their mean and
    // spread. The warm-up lasts at least WARM_S and until it is steady: a GPU that sat idle starts
    // at idle clocks.
    let mut decode_run = |e: &mut Engine| -> Result<f64> {
        let mut first = None;
        let steps = e.generate(&prompt, a.decode + 1, &mut sampler, None, false, &mut |_| {
            first.get_or_insert_with(Instant::now);
            true
        })?;
        let dt = first.map(|f| f.elapsed().as_secs_f64()).unwrap_or(1.0);
        Ok((steps.len() - 1) as f64 / dt)
    };
    let warm = Instant::now();
    let mut last = decode_run(&mut e)?;
    loop {
        let now = decode_run(&mut e)?;
        let steady = (now - last).abs() <= WARM_AGREE * now;
        last = now;
        let t = warm.elapsed().as_secs_f64();
        if t >= WARM_MAX_S || t >= WARM_S && steady {
            break;
        }
    }
    let warm_s = warm.elapsed().as_secs_f64();
    let (reps, unsteady) = steady_runs(|| decode_run(&mut e), DECODE_REPS, STEADY_AGREE, STEADY_MAX_EXTRA)?;
    let (decode_tps, decode_sd) = mean_sd(&reps);
    let dropped = match unsteady {
        0 => String::new(),
        n => format!(", {n} unsteady before them"),
    };
    let avg_ctx = (16 + 8 + a.decode / 2) as f64;
    let kv_bytes = crate::model::arch::state_bytes_per_token(&c, avg_ctx);
    let bytes_per_tok = e.weights.decode_bytes() as f64 + kv_bytes;
    println!("wgllm bench: {label} on {dev_name}");
    if let Some(bw) = bw {
        println!(
            "  read bandwidth (probe, this run): {:.1} GB/s -> limit {:.0} tokens/s at {:.1} MB/token",
            bw / 1e9,
            bw / bytes_per_tok,
            bytes_per_tok / 1e6
        );
    }
    let frac = bw.map(|bw| decode_tps * bytes_per_tok / bw);
    println!(
        "  decode batch 1: {decode_tps:.1} ± {decode_sd:.1} tokens/s ({:.3} ms/token; {DECODE_REPS} runs after {:.1} s of warm-up{dropped}){}",
        1e3 / decode_tps,
        warm_s,
        frac.map(|f| format!(", {:.1}% of the bandwidth limit", 100.0 * f))
            .unwrap_or_default()
    );
    println!(
        "  CPU time recording a decode step: {record_ms:.3} ms, submitting it {submit_ms:.3} ms, then its token in {wait_ms:.3} ms; {} dispatches/step",
        dispatches_per_step(&e)
    );
    let mut prefill = Vec::new();
    let past = ids(a.depth, 17);
    let at = match a.depth {
        0 => String::new(),
        d => format!(" at depth {d}"),
    };
    for &t in &a.prefill {
        if a.depth + t + 1 > e.max_ctx {
            println!("  prefill {t}{at}: skipped (context {})", e.max_ctx);
            continue;
        }
        let p = ids(t, 11);
        run_prefill(&mut e, &past, &p, false)?; // warm-up: kernels compiled, workspace allocated
        let mut kv_len = 0;
        let mut runs = Vec::with_capacity(PREFILL_REPS);
        for _ in 0..PREFILL_REPS {
            let (s, kv) = run_prefill(&mut e, &past, &p, false)?;
            runs.push(t as f64 / s);
            kv_len = kv;
        }
        let (tps, sd) = mean_sd(&runs);
        println!(
            "  prefill {t}{at}: {tps:.0} ± {sd:.0} tokens/s ({:.1} ms; {PREFILL_REPS} runs)",
            t as f64 / tps * 1e3
        );
        prefill.push(
            json!({"tokens": t, "depth": a.depth, "kv_len": kv_len, "tokens_per_s": tps,
            "tokens_per_s_runs": runs, "ms": t as f64 / tps * 1e3}),
        );
    }
    let mut prof = json!(null);
    if a.profile {
        println!("  GPU time per kernel (timestamp queries):");
        let mut step = |e: &mut Engine| -> Result<f64> {
            e.dev.set_profiling(true)?;
            let t0 = Instant::now();
            e.forward(&mut cache, &[tok], Logits::Last, &mut |_, _, _| Ok(()))?;
            e.choose(1, &mut Sampler::new(Sampling::default()), None)?;
            Ok(t0.elapsed().as_secs_f64())
        };
        let mut d = profile_of_engine("decode step", &mut step, &mut e, bw)?;
        // the profiler gives each dispatch its own pass and timestamps: what that adds, against
        // the unprofiled step's wait for its token (submit to read-back) measured above
        let n: u64 = d["kernels"]
            .as_array()
            .map(|k| k.iter().filter_map(|r| r["dispatches"].as_u64()).sum())
            .unwrap_or(0);
        if let Some(gpu) = d["gpu_ms"].as_f64().filter(|_| n > 0) {
            let us = (gpu - wait_ms) * 1e3 / n as f64;
            if us > 0.0 {
                println!(
                    "    (unprofiled, the step's token came {wait_ms:.3} ms after its submit: about {us:.1} us a \
                     dispatch of the sum above is the profiler's own passes and timestamps)"
                );
            }
            d["pass_overhead_us"] = json!(us);
        }
        // the prefill profiled at the longest length asked (512 without --prefill)
        let len = a
            .prefill
            .iter()
            .copied()
            .filter(|&t| t < e.max_ctx)
            .max()
            .unwrap_or(512);
        let p = ids(len.min(e.max_ctx.saturating_sub(1 + a.depth).max(1)), 13);
        let mut pre = |e: &mut Engine| -> Result<f64> { Ok(run_prefill(e, &past, &p, true)?.0) };
        let pf = profile_of_engine(&format!("prefill {}{at}", p.len()), &mut pre, &mut e, bw)?;
        prof = json!({"decode_step": d, "prefill": pf});
    }
    let out = json!({
        "model": label, "device": dev_name, "read_bandwidth_gbs": bw.map(|b| b / 1e9),
        "decode": {"tokens_per_s": decode_tps, "tokens_per_s_runs": reps, "unsteady_runs": unsteady, "warm_up_s": warm_s, "cpu_record_ms": record_ms, "cpu_submit_ms": submit_ms, "sync_wait_ms": wait_ms, "bytes_per_token": bytes_per_tok, "fraction_of_bandwidth_limit": frac, "steps": a.decode},
        "prefill": prefill, "profile": prof,
    });
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&out).unwrap()).map_err(|er| Error::File {
            path: p.display().to_string(),
            detail: er.to_string(),
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Seconds `p` takes to prefill into a fresh cache after `past` (untimed, waited for: its token
/// read back), and the cache's length after it; `profile`: the device's profiler on for `p`
/// alone.
fn run_prefill(e: &mut Engine, past: &[u32], p: &[u32], profile: bool) -> Result<(f64, usize)> {
    let mut cache = e.new_cache()?;
    if !past.is_empty() {
        e.forward(&mut cache, past, Logits::Last, &mut |_, _, _| Ok(()))?;
        e.choose(past.len(), &mut Sampler::new(Sampling::default()), None)?;
    }
    if profile {
        e.dev.set_profiling(true)?;
    }
    let t0 = Instant::now();
    e.forward(&mut cache, p, Logits::Last, &mut |_, _, _| Ok(()))?;
    e.choose(p.len(), &mut Sampler::new(Sampling::default()), None)?;
    Ok((t0.elapsed().as_secs_f64(), cache.len()))
}

/// Runs `run` until its last `n` results agree within `agree` (max - min over their mean) or
/// `max_extra` results past the first `n` were dropped; the last `n` and how many came before them.
fn steady_runs(
    mut run: impl FnMut() -> Result<f64>,
    n: usize,
    agree: f64,
    max_extra: usize,
) -> Result<(Vec<f64>, usize)> {
    let mut last: Vec<f64> = Vec::with_capacity(n + 1);
    let mut dropped = 0;
    loop {
        last.push(run()?);
        if last.len() > n {
            last.remove(0);
            dropped += 1;
        }
        if last.len() < n {
            continue;
        }
        let (lo, hi) = last
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        let mean = last.iter().sum::<f64>() / n as f64;
        if hi - lo <= agree * mean || dropped >= max_extra {
            return Ok((last, dropped));
        }
    }
}

/// The mean of `v` and its sample standard deviation (0 for one value).
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let var = v.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (v.len().max(2) - 1) as f64;
    (mean, var.sqrt())
}

/// The device's per-kernel GPU times of `run`, which turns the profiler on where its measured part
/// starts (after any untimed set-up: a prefill's cached prefix).
fn profile_of_engine(
    what: &str,
    run: &mut dyn FnMut(&mut Engine) -> Result<f64>,
    eng: &mut Engine,
    bw: Option<f64>,
) -> Result<serde_json::Value> {
    if let Support::No(why) = eng.dev.capability(Capability::Timestamps) {
        return Ok(json!(why));
    }
    let wall = run(eng)?;
    let rows = eng.dev.profile();
    eng.dev.set_profiling(false)?;
    let mut v = super::profile_table::print(&format!("{what}: wall {:.3} ms (profiled), ", wall * 1e3), &rows, bw);
    v["wall_ms"] = json!(wall * 1e3);
    Ok(v)
}

/// Dispatches one decode step records (0 where the device does not batch work into submits).
fn dispatches_per_step(e: &Engine) -> u64 {
    e.dev.last_submit_dispatches().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::steady_runs;

    fn from(v: &[f64]) -> impl FnMut() -> crate::error::Result<f64> + '_ {
        let mut i = 0;
        move || {
            i += 1;
            Ok(v[i - 1])
        }
    }

    #[test]
    fn steady_runs_wait_for_agreeing_runs() {
        // already steady: the first three
        let (r, d) = steady_runs(from(&[100.0, 101.0, 100.5]), 3, 0.03, 12).unwrap();
        assert_eq!((r, d), (vec![100.0, 101.0, 100.5], 0));
        // climbing clocks: the runs before the plateau are dropped
        let v = [550.0, 630.0, 740.0, 800.0, 806.0, 803.0, 0.0];
        let (r, d) = steady_runs(from(&v), 3, 0.03, 12).unwrap();
        assert_eq!((r, d), (vec![800.0, 806.0, 803.0], 3));
        // never steady: stops after max_extra dropped runs with the last three
        let v = [100.0, 200.0, 100.0, 200.0, 100.0, 200.0];
        let (r, d) = steady_runs(from(&v), 3, 0.03, 2).unwrap();
        assert_eq!((r, d), (vec![100.0, 200.0, 100.0], 2));
    }
}
