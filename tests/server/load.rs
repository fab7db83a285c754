//! The loopback load test: `streams` clients, each sending streaming completions (mixed prompt
//! lengths and budgets, temperature 0) back to back until `secs` run out; about one request in ten
//! disconnects after a couple of chunks. Every other response must be complete (`[DONE]`, a finish
//! reason, usage) and identical to the same prompt served alone; at the end no KV block may be held.
//! Prints requests, tokens/s, and p50/p99 time to first token and inter-token latency.
use super::http;
use super::proc::{Server, KEY};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Tally {
    complete: u64,
    disconnected: u64,
    lost: Vec<String>,
    corrupted: Vec<String>,
    tokens: u64,
    ttft: Vec<f64>,
    itl: Vec<f64>,
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn prompt(i: usize) -> (String, usize) {
    let words = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "slept"];
    let len = [1, 3, 8, 17, 40, 90, 160, 220][i % 8];
    let text: Vec<&str> = (0..len).map(|k| words[(k * 7 + i) % words.len()]).collect();
    (text.join(" "), [24, 8, 40, 16, 32, 12, 20, 28][i % 8])
}

/// One streamed request; Ok((text, finish, completion_tokens)) or why it is not complete.
fn one(addr: &str, model: &str, i: usize, cut: bool, t: &Mutex<Tally>) -> Result<Option<(String, String)>, String> {
    let (p, max) = prompt(i);
    let body = json!({"model": model, "prompt": p, "max_tokens": max, "temperature": 0, "stream": true,
                      "stream_options": {"include_usage": true}});
    let t0 = Instant::now();
    let mut ev = http::stream(addr, "/v1/completions", Some(KEY), &body).map_err(|e| format!("connect: {e}"))?;
    if ev.status != 200 {
        let st = ev.status;
        return Err(format!("status {st}: {}", ev.rest()));
    }
    let (mut text, mut finish, mut usage, mut done) = (String::new(), None, None, false);
    let (mut last, mut first, mut chunks) = (None::<Instant>, None, 0);
    let mut itl = vec![];
    while let Some(d) = ev.next_data() {
        if d == "[DONE]" {
            done = true;
            break;
        }
        let v: serde_json::Value = serde_json::from_str(&d).map_err(|e| format!("bad chunk {d}: {e}"))?;
        if v.get("error").is_some() {
            return Err(format!("error event: {d}"));
        }
        let now = Instant::now();
        if let Some(c) = v["choices"].get(0) {
            chunks += 1;
            text.push_str(c["text"].as_str().unwrap_or(""));
            if let Some(f) = c["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
            if first.is_none() {
                first = Some(now - t0);
            } else if let Some(l) = last {
                itl.push((now - l).as_secs_f64());
            }
            last = Some(now);
            if cut && chunks == 2 {
                // a client that goes away midway: drop the connection
                t.lock().unwrap().disconnected += 1;
                return Ok(None);
            }
        } else if v["usage"].is_object() {
            usage = v["usage"]["completion_tokens"].as_u64();
        }
    }
    let (Some(f), Some(u), true) = (finish.clone(), usage, done) else {
        return Err(format!("incomplete: finish {finish:?}, usage {usage:?}, [DONE] {done}"));
    };
    let mut g = t.lock().unwrap();
    g.tokens += u;
    g.ttft.extend(first.map(|d| d.as_secs_f64()));
    g.itl.extend(itl);
    Ok(Some((text, f)))
}

pub fn run(model_args: &[&str], model_name: &str) -> Result<String, String> {
    let secs: u64 = std::env::var("WGLLM_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let streams: usize = std::env::var("WGLLM_LOAD_STREAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let mut args = vec!["--api-key", KEY, "--max-seqs", "64"];
    args.extend_from_slice(model_args);
    let s = Server::start(&args);
    let addr = s.addr.clone();
    // each prompt served alone first: the answers every loaded response must reproduce
    let refs: Vec<(String, String)> = (0..8)
        .map(|i| {
            let (p, max) = prompt(i);
            let r = http::post(
                &addr,
                "/v1/completions",
                Some(KEY),
                &json!({"model": model_name, "prompt": p, "max_tokens": max, "temperature": 0}),
            );
            assert_eq!(r.status, 200, "{}", r.body);
            let c = &r.json()["choices"][0];
            (
                c["text"].as_str().unwrap().to_string(),
                c["finish_reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let refs = Arc::new(refs);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(secs);
    let workers: Vec<_> = (0..streams)
        .map(|w| {
            let (addr, refs, tally, name) = (addr.clone(), refs.clone(), tally.clone(), model_name.to_string());
            std::thread::spawn(move || {
                let mut k = 0usize;
                while Instant::now() < deadline {
                    let i = (w + k) % 8;
                    let cut = (w * 7 + k * 3) % 10 == 0;
                    match one(&addr, &name, i, cut, &tally) {
                        Ok(Some(got)) if got == refs[i] => tally.lock().unwrap().complete += 1,
                        Ok(Some(got)) => tally
                            .lock()
                            .unwrap()
                            .corrupted
                            .push(format!("prompt {i}: got {got:?}, alone {:?}", refs[i])),
                        Ok(None) => {}
                        Err(e) => tally.lock().unwrap().lost.push(format!("prompt {i}: {e}")),
                    }
                    k += 1;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().map_err(|_| "a client thread panicked")?;
    }
    let wall = t0.elapsed().as_secs_f64();
    let kv = s.wait_kv_free(Duration::from_secs(30));
    let mut g = tally.lock().unwrap();
    let (ttft50, ttft99) = (pct(&mut g.ttft, 0.5), pct(&mut g.ttft, 0.99));
    let (itl50, itl99) = (pct(&mut g.itl, 0.5), pct(&mut g.itl, 0.99));
    let summary = format!(
        "load: {streams} streams for {wall:.0}s: {} complete, {} disconnected, {} lost, {} corrupted; {} tokens, \
         {:.1} tokens/s; TTFT p50 {:.3}s p99 {:.3}s; ITL p50 {:.4}s p99 {:.4}s; KV {}",
        g.complete,
        g.disconnected,
        g.lost.len(),
        g.corrupted.len(),
        g.tokens,
        g.tokens as f64 / wall,
        ttft50,
        ttft99,
        itl50,
        itl99,
        if kv.is_ok() { "back to zero" } else { "NOT back to zero" }
    );
    println!("    {summary}");
    if !g.lost.is_empty() || !g.corrupted.is_empty() {
        return Err(format!(
            "{summary}\nlost: {:?}\ncorrupted: {:?}",
            &g.lost[..g.lost.len().min(5)],
            &g.corrupted[..g.corrupted.len().min(5)]
        ));
    }
    kv.map_err(|e| format!("{summary}: {e}"))?;
    if g.complete == 0 || g.disconnected == 0 {
        return Err(format!("{summary}: the run needs complete and disconnected requests"));
    }
    Ok(summary)
}
