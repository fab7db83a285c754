//! GPU timestamps per kernel (profiling mode): each dispatch gets its own compute pass with
//! begin/end timestamps; at each submit the queries are resolved and summed by kernel entry point.
//! Off by default: a pass per dispatch costs a little, so benchmarks measure wall time without it
//! and use this only to say where the time goes.
use std::collections::BTreeMap;

pub const MAX_DISPATCHES: u32 = 2048;

/// The profile row a dispatch of `key` is charged to: its entry point, and for the linear kernels
/// (float and quantized) also the variant (the tile shape, the loaders, a fused norm or swiglu),
/// the one thing that tells their rows apart (a decode step's q/k/v, gate/up and LM head).
pub fn row_name(key: &super::kernel::KernelKey) -> &'static str {
    if !matches!(key.entry, "linear_coop" | "matvec" | "qmatvec" | "qmatvec_xs") {
        return key.entry;
    }
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let name = format!("{} {}", key.entry, key.variant);
    let mut names = NAMES.lock().unwrap();
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.into_boxed_str());
    names.push(n);
    n
}

pub struct Profiler {
    pub queries: wgpu::QuerySet,
    pub resolve: wgpu::Buffer,
    /// each dispatch's entry and the (bytes, FLOPs) it is charged
    pub labels: Vec<(&'static str, (f64, f64))>,
    /// (bytes, FLOPs) of the op being recorded (`op::traffic`), for its first dispatch
    pub pending: Option<(f64, f64)>,
    /// entry -> (total ns, dispatches, bytes, FLOPs)
    pub totals: BTreeMap<&'static str, (f64, u64, f64, f64)>,
    pub period_ns: f64,
}

impl Profiler {
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Profiler {
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profile"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * MAX_DISPATCHES,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile-resolve"),
            size: 16 * MAX_DISPATCHES as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Profiler {
            queries,
            resolve,
            labels: Vec::new(),
            pending: None,
            totals: BTreeMap::new(),
            period_ns: queue.get_timestamp_period() as f64,
        }
    }

    /// Timestamp writes for the next dispatch's own pass.
    pub fn writes(&mut self, entry: &'static str) -> wgpu::ComputePassTimestampWrites<'_> {
        let i = self.labels.len() as u32;
        let traffic = self.pending.take().unwrap_or_default();
        self.labels.push((entry, traffic));
        wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        }
    }

    pub fn full(&self) -> bool {
        self.labels.len() as u32 >= MAX_DISPATCHES
    }

    /// Adds the resolved ticks (2 u64 per dispatch) to the totals. A dispatch is charged from
    /// the later of its own begin and the previous dispatch's end, to its end: a begin-of-pass
    /// timestamp may be written before the work queued ahead of it has finished, and charging from
    /// it would count that wait again (sums far above the wall time of a step).
    pub fn absorb(&mut self, ticks: &[u64]) {
        let mut prev_end = 0u64;
        for (i, (label, (bytes, flops))) in self.labels.drain(..).enumerate() {
            let (a, b) = (ticks[2 * i], ticks[2 * i + 1]);
            let from = if i == 0 { a } else { a.max(prev_end) };
            prev_end = prev_end.max(b);
            let e = self.totals.entry(label).or_default();
            e.0 += b.saturating_sub(from) as f64 * self.period_ns;
            e.1 += 1;
            e.2 += bytes;
            e.3 += flops;
        }
    }
}
