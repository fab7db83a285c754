//! `wgllm bench --batch 1,8,32,64`: the serving engine's aggregate throughput per batch size. B
//! requests of `--prompt-len` random tokens each generate `--gen-len` tokens (EOS ignored) through
//! the scheduler: prefill tokens/s (the steps until every request has its first token), decode
//! tokens/s (the steps after, every sequence decoding), the KV bytes a token costs and a decode
//! step's fraction of the bandwidth limit (weights read once a step + each sequence's KV).
use crate::backend::{BatchInvariance, Capability, Support};
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
    /// batch 1 under `BatchInvariance::Off`, as `wgllm run` sets its engine
    pub as_run: bool,
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
            kernels: (b.as_run && n == 1).then_some(BatchInvariance::Off),
            ..ServeOptions::default()
        };
        let mut s = ServeEngine::new(e, &opts)?;
        // warm-up: the kernels of a prefill chunk as long as a request's prompt (up to a step's
        // tokens) and of a decode step compiled, buffers allocated: a kernel's first use compiles
        // it, which would be counted in the prefill rate otherwise
        s.add(Request::greedy(u64::MAX, vec![1; p.clamp(1, opts.max_batch_tokens)], 2))?;
        s.run_to_end()?;
        for i in 0..n as u64 {
            let ids = (0..p as u64)
                .map(|j| ((i * 7919 + j) * 2654435761 % v) as u32)
                .collect();
            s.add(Request::greedy(i, ids, g))?;
        }
        let t0 = Instant::now();
        let mut tally = Tally::new(n);
        let mut profiled = json!(null);
        let mut prefill_profile = json!(null);
        if b.profile && n == biggest {
            // the first step alone (a prefill of as many prompt tokens as a step takes)
            s.set_pipelining(false);
            if let Support::Yes = s.engine.dev.capability(Capability::Timestamps) {
                s.engine.dev.set_profiling(true)?;
            }
            tally.count(&mut s.step()?);
            prefill_profile = profile_rows(&mut s, &format!("the first step of {n} sequences (prefill)"), bw)?;
            s.set_pipelining(true);
        }
        while !s.is_idle() {
            let profile = b.profile && n == biggest && tally.t_first.is_some() && profiled.is_null();
            if profile {
                // one step alone in flight, so the timestamps are that step's
                s.set_pipelining(false);
                while s.steps_in_flight() > 0 {
                    tally.count(&mut s.step()?);
                }
                if let Support::Yes = s.engine.dev.capability(Capability::Timestamps) {
                    s.engine.dev.set_profiling(true)?;
                }
            }
            let mut ev = s.step()?;
            if profile {
                profiled = profile_rows(&mut s, &format!("a {n}-sequence decode step"), bw)?;
                s.set_pipelining(true);
            }
            tally.count(&mut ev);
        }
        let total = t0.elapsed().as_secs_f64();
        let tf = tally.t_first.map(|t| (t - t0).as_secs_f64()).unwrap_or(total);
        let prefill_tps = (n * p) as f64 / tf;
        let decode_s = total - tf;
        let decode_tps = tally.tokens_after as f64 / decode_s.max(1e-9);
        let kv_tok = s.kv_bytes_per_token();
        // a decode step reads the weights once and each sequence's KV (average context p + g/2)
        let step_bytes =
            s.engine.weights.decode_bytes() as f64 + n as f64 * (p as f64 + g as f64 / 2.0) * kv_tok as f64;
        let step_s = decode_s / tally.steps_after.max(1) as f64;
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
            "preemptions": st.preemptions, "profile": profiled, "prefill_profile": prefill_profile,
        }));
        e = s.into_engine();
    }
    Ok(json!(rows))
}

/// The tokens of the run so far: the decode phase starts once every request has had its first
/// token (counted by request, not by event: a sequence prefilled early decodes alongside the
/// others' prefill chunks, and those tokens belong to neither phase's rate).
struct Tally {
    n: usize,
    seen: std::collections::HashSet<crate::serve::RequestId>,
    t_first: Option<Instant>,
    tokens_after: u64,
    steps_after: u64,
}

impl Tally {
    fn new(n: usize) -> Tally {
        Tally {
            n,
            seen: Default::default(),
            t_first: None,
            tokens_after: 0,
            steps_after: 0,
        }
    }

    /// A step's events.
    fn count(&mut self, ev: &mut Vec<crate::serve::Event>) {
        if self.t_first.is_some() {
            self.tokens_after += ev.len() as u64;
            self.steps_after += u64::from(!ev.is_empty());
        } else {
            self.seen.extend(ev.iter().map(|e| e.id));
            if self.seen.len() >= self.n {
                self.t_first = Some(Instant::now());
            }
        }
        ev.clear();
    }
}
/// The kernel time of the step just run (the profile was on for it), titled `what`.
fn profile_rows(s: &mut ServeEngine, what: &str, bw: Option<f64>) -> Result<serde_json::Value> {
    let rows = s.engine.dev.profile();
    s.engine.dev.set_profiling(false)?;
    if rows.is_empty() {
        return Ok(json!("no timestamps on this device"));
    }
    Ok(super::profile_table::print(&format!("{what}: "), &rows, bw))
}
