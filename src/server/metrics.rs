//! `/metrics`: Prometheus text exposition (format 0.0.4). Counters and histograms are updated by the
//! handlers (HTTP status, tokens, latencies) and the engine thread (the scheduler's snapshot after
//! every step), and rendered on each scrape.
use crate::serve::Stats;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Bucket bounds (seconds) of time to first token: prefill on a slow device takes seconds.
const TTFT_BUCKETS: [f64; 13] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0];
/// Bucket bounds (seconds) of the time between two tokens of a request.
const ITL_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    n: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            n: 0,
        }
    }

    fn observe(&mut self, v: f64) {
        for (c, b) in self.counts.iter_mut().zip(self.bounds) {
            if v <= *b {
                *c += 1;
            }
        }
        self.sum += v;
        self.n += 1;
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (c, b) in self.counts.iter().zip(self.bounds) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {c}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.n);
        let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", self.sum, self.n);
    }
}

struct Inner {
    /// HTTP responses of the /v1 endpoints by status code
    requests: BTreeMap<u16, u64>,
    prompt_tokens: u64,
    generated_tokens: u64,
    engine: Stats,
    ttft: Histogram,
    itl: Histogram,
}

pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            inner: Mutex::new(Inner {
                requests: BTreeMap::new(),
                prompt_tokens: 0,
                generated_tokens: 0,
                engine: Stats::default(),
                ttft: Histogram::new(&TTFT_BUCKETS),
                itl: Histogram::new(&ITL_BUCKETS),
            }),
        }
    }
}

impl Metrics {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        // a panic elsewhere while holding the lock leaves plain counters: still worth reading
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    pub fn request(&self, status: u16) {
        self.with(|m| *m.requests.entry(status).or_default() += 1);
    }

    pub fn add_prompt(&self, n: u64) {
        self.with(|m| m.prompt_tokens += n);
    }

    pub fn add_generated(&self, n: u64) {
        self.with(|m| m.generated_tokens += n);
    }

    pub fn ttft(&self, secs: f64) {
        self.with(|m| m.ttft.observe(secs));
    }

    pub fn itl(&self, secs: f64) {
        self.with(|m| m.itl.observe(secs));
    }

    pub fn set_engine(&self, s: &Stats) {
        self.with(|m| m.engine = s.clone());
    }

    pub fn engine(&self) -> Stats {
        self.with(|m| m.engine.clone())
    }

    pub fn render(&self) -> String {
        self.with(|m| {
            let mut o = String::new();
            let e = &m.engine;
            let mut one = |name: &str, kind: &str, help: &str, v: String| {
                let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
            };
            one(
                "wgllm_prompt_tokens_total",
                "counter",
                "Prompt tokens of accepted requests.",
                m.prompt_tokens.to_string(),
            );
            one(
                "wgllm_generation_tokens_total",
                "counter",
                "Tokens generated.",
                m.generated_tokens.to_string(),
            );
            one(
                "wgllm_requests_running",
                "gauge",
                "Requests in the running batch.",
                e.running.to_string(),
            );
            one(
                "wgllm_requests_waiting",
                "gauge",
                "Requests waiting for the batch.",
                e.waiting.to_string(),
            );
            one(
                "wgllm_kv_blocks_used",
                "gauge",
                "KV blocks held by a sequence.",
                e.blocks_used.to_string(),
            );
            one(
                "wgllm_kv_blocks_cached",
                "gauge",
                "Idle KV blocks kept by the prefix cache.",
                e.blocks_cached.to_string(),
            );
            one(
                "wgllm_kv_blocks_total",
                "gauge",
                "KV blocks in the pool.",
                e.blocks_total.to_string(),
            );
            let usage = e.blocks_used as f64 / (e.blocks_total.max(1)) as f64;
            one(
                "wgllm_kv_usage_ratio",
                "gauge",
                "KV blocks used / total.",
                usage.to_string(),
            );
            one(
                "wgllm_prefix_cache_hits_total",
                "counter",
                "Full prompt blocks found in the prefix cache.",
                e.prefix_hits.to_string(),
            );
            one(
                "wgllm_prefix_cache_misses_total",
                "counter",
                "Full prompt blocks not found in the prefix cache.",
                e.prefix_misses.to_string(),
            );
            one(
                "wgllm_prefix_cache_hit_rate",
                "gauge",
                "Prefix cache hits / lookups.",
                e.prefix_hit_rate().to_string(),
            );
            one(
                "wgllm_preemptions_total",
                "counter",
                "Sequences preempted for lack of KV blocks.",
                e.preemptions.to_string(),
            );
            one(
                "wgllm_requests_aborted_total",
                "counter",
                "Sequences aborted (disconnects, stop strings, shutdown).",
                e.aborted.to_string(),
            );
            let _ = writeln!(
                o,
                "# HELP wgllm_http_requests_total Responses of the /v1 endpoints by HTTP status.\n\
                 # TYPE wgllm_http_requests_total counter"
            );
            for (s, n) in &m.requests {
                let _ = writeln!(o, "wgllm_http_requests_total{{status=\"{s}\"}} {n}");
            }
            m.ttft.render(
                &mut o,
                "wgllm_time_to_first_token_seconds",
                "Time from a request's arrival to its first token.",
            );
            m.itl.render(
                &mut o,
                "wgllm_inter_token_latency_seconds",
                "Time between two tokens of a request.",
            );
            o
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let m = Metrics::default();
        m.ttft(0.02);
        m.ttft(3.0);
        m.request(200);
        m.request(200);
        m.request(400);
        let t = m.render();
        assert!(
            t.contains("wgllm_time_to_first_token_seconds_bucket{le=\"0.01\"} 0\n"),
            "{t}"
        );
        assert!(
            t.contains("wgllm_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"),
            "{t}"
        );
        assert!(
            t.contains("wgllm_time_to_first_token_seconds_bucket{le=\"5\"} 2\n"),
            "{t}"
        );
        assert!(t.contains("wgllm_time_to_first_token_seconds_count 2\n"), "{t}");
        assert!(t.contains("wgllm_http_requests_total{status=\"200\"} 2\n"), "{t}");
        assert!(t.contains("wgllm_http_requests_total{status=\"400\"} 1\n"), "{t}");
    }
}
