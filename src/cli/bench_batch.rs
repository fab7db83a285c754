//! `wgllm bench --batch 1,8,32,64`: the serving engine's aggregate throughput per batch size. B
//! requests of `--prompt-len` random tokens each generate `--gen-len` tokens (EOS ignored) through
//! the scheduler: prefill tokens/s (the steps until every request has its first token), decode
//! tokens/s (the steps after, every sequence decoding), the KV bytes a token costs and a decode
//! step's fraction of the bandwidth limit (weights read once a step + each sequence's KV).
use crate::backend::{Capability, Support};
use crate::engine::Engine;
use crate::error::Result;
use crate::serve::{KvMemory, Request, ServeEngine, ServeOptions};
use serde_json::json;
use std::time::Instant;

pub struct BatchBench {
    pub batches: Vec<usize>,
    pub prompt_len: usize,
    pub gen_len: usize,
    pub kv_dtype: crate::dtype::DType,
    pub profile: bool,
}

/// Runs every batch size on `e` (its weights reused) and returns the JSON rows.
pub fn run(mut e: Engine, b: &BatchBench, bw: Option<f64>) -> Result<serde_json::Value> {
    e.eos.clear();
    let v = e.cfg.vocab_size as u64;
    let (p, g) = (b.prompt_len, b.gen_len.max(2));
    let mut rows = Vec::new();
    let biggest = b.batches.iter().copied().max().unwrap_or(1);
    for &n in &b.batches {
        let opts = ServeOptions {
            kv_dtype: b.kv_dtype,
            max_seqs: n.max(1),
            max_batch_tokens: 2048.max(n),
            kv_memory: KvMemory::Bytes(u64::MAX),
            ..ServeOptions::default()
        };
        let mut s = ServeEngine::new(e, &opts)?;
        // warm-up: every kernel of a prefill and a decode step compiled, buffers allocated
        s.add(Request::greedy(u64::MAX, vec![1; 8.min(p.max(1))], 2))?;
        s.run_to_end()?;
        for i in 0..n as u64 {
            let ids = (0..p as u64)
                .map(|j| ((i * 7919 + j) * 2654435761 % v) as u32)
                .collect();
            s.add(Request::greedy(i, ids, g))?;
        }
        let t0 = Instant::now();
        let (mut first, mut tokens_after, mut t_first) = (0, 0u64, None);
        let mut profiled = json!(null);
        while !s.is_idle() {
            let profile = b.profile && n == biggest && t_first.is_some() && profiled.is_null();
            if profile {
                // one step alone in flight, so the timestamps are that step's
                s.set_pipelining(false);
                while s.steps_in_flight() > 0 {
                    count(&mut s.step()?, &mut first, &mut tokens_after, &mut t_first, n);
                }
                if let Support::Yes = s.engine.dev.capability(Capability::Timestamps) {
                    s.engine.dev.set_profiling(true)?;
                }
            }
            let mut ev = s.step()?;
            if profile {
                profiled = profile_rows(&mut s, n, bw)?;
                s.set_pipelining(true);
            }
            count(&mut ev, &mut first, &mut tokens_after, &mut t_first, n);
        }
        let total = t0.elapsed().as_secs_f64();
        let tf = t_first.map(|t| (t - t0).as_secs_f64()).unwrap_or(total);
        let prefill_tps = (n * p) as f64 / tf;
        let decode_s = total - tf;
        let decode_tps = tokens_after as f64 / decode_s.max(1e-9);
        let kv_tok = s.kv_bytes_per_token();
        // a decode step reads the weights once and each sequence's KV (average context p + g/2)
        let step_bytes =
            s.engine.weights.decode_bytes() as f64 + n as f64 * (p as f64 + g as f64 / 2.0) * kv_tok as f64;
        let step_s = decode_s / (g - 1) as f64;
        let frac = bw.map(|bw| step_bytes / step_s / bw);
        println!(
            "  batch {n:>3}: decode {decode_tps:>9.1} tokens/s ({:.3} ms/step{}), prefill {prefill_tps:>9.0} tokens/s; KV {kv_tok} B/token",
            step_s * 1e3,
            frac.map(|f| format!(", {:.1}% of the bandwidth limit", 100.0 * f)).unwrap_or_default()
        );
        let st = s.stats();
        rows.push(json!({
            "batch": n, "prompt_len": p, "gen_len": g,
            "decode_tokens_per_s": decode_tps, "step_ms": step_s * 1e3, "prefill_tokens_per_s": prefill_tps,
            "kv_bytes_per_token": kv_tok, "fraction_of_bandwidth_limit": frac,
            "preemptions": st.preemptions, "profile": profiled,
        }));
        e = s.into_engine();
    }
    Ok(json!(rows))
}

/// Counts a step's tokens: the first token of every request, then the tokens after.
fn count(
    ev: &mut Vec<crate::serve::Event>,
    first: &mut usize,
    after: &mut u64,
    t_first: &mut Option<Instant>,
    n: usize,
) {
    if t_first.is_some() {
        *after += ev.len() as u64;
    } else {
        *first += ev.len();
        if *first >= n {
            *t_first = Some(Instant::now());
        }
    }
    ev.clear();
}

/// The kernel time of the decode step just run (the profile was on for it).
fn profile_rows(s: &mut ServeEngine, n: usize, bw: Option<f64>) -> Result<serde_json::Value> {
    let rows = s.engine.dev.profile();
    s.engine.dev.set_profiling(false)?;
    if rows.is_empty() {
        return Ok(json!("no timestamps on this device"));
    }
    Ok(super::profile_table::print(
        &format!("a {n}-sequence decode step: "),
        &rows,
        bw,
    ))
}
