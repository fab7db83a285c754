//! The kernel table of `wgllm bench --profile` (single stream and `--batch`): each kernel's GPU
//! time and share, its dispatches, and against its bound: the bytes its ops must move (`op::traffic`)
//! as GB/s and as a fraction of the read bandwidth the same run measured, and the FLOP rate of the
//! ones that multiply (linear, attention). No compute peak is measured, so a FLOP-bound kernel
//! shows its rate, not a fraction. Profiled times run slower than unprofiled ones (a pass and two
//! timestamps a dispatch), so the fractions are lower bounds.
use crate::backend::KernelTime;
use serde_json::json;

/// Prints the rows, longest first, under a heading line; returns them as JSON.
pub(super) fn print(heading: &str, rows: &[KernelTime], bw: Option<f64>) -> serde_json::Value {
    let gpu: f64 = rows.iter().map(|r| r.ns).sum();
    println!(
        "  {heading}GPU kernel time {:.3} ms over {} dispatches",
        gpu / 1e6,
        rows.iter().map(|r| r.dispatches).sum::<u64>()
    );
    let mut sorted = rows.to_vec();
    sorted.sort_by(|a, b| b.ns.total_cmp(&a.ns));
    let mut out = vec![];
    for r in &sorted {
        let s = r.ns.max(1.0) / 1e9;
        let gbs = (r.bytes > 0.0).then(|| r.bytes / s / 1e9);
        let frac = gbs.zip(bw).map(|(g, bw)| g * 1e9 / bw);
        let tflops = (r.flops > 0.0).then(|| r.flops / s / 1e12);
        let bound = match (gbs, frac) {
            (Some(g), Some(f)) => format!("{g:>7.1} GB/s {:>5.1}% of the probe", 100.0 * f),
            (Some(g), None) => format!("{g:>7.1} GB/s"),
            _ => "bytes not known on the host".to_string(),
        };
        println!(
            "    {:<22} {:>9.3} ms {:>5.1}%  {:>5} dispatches  {bound}{}",
            r.kernel,
            r.ns / 1e6,
            100.0 * r.ns / gpu.max(1.0),
            r.dispatches,
            tflops.map(|t| format!(", {t:.3} TFLOP/s")).unwrap_or_default()
        );
        out.push(json!({
            "kernel": r.kernel, "ms": r.ns / 1e6, "dispatches": r.dispatches, "bytes": r.bytes,
            "flops": r.flops, "gb_per_s": gbs, "fraction_of_bandwidth": frac, "tflop_per_s": tflops,
        }));
    }
    json!({"gpu_ms": gpu / 1e6, "kernels": out})
}
