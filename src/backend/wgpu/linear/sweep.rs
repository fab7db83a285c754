//! `WGLLM_BENCH_DEVICE=nvidia cargo test --release --lib linear::sweep -- --ignored --nocapture`:
//! the time of each candidate plan on model shapes, to tune `plan`. Weights rotate over enough
//! copies to stream from memory rather than L2. A time is submit-to-idle wall time over up to
//! 2000 recorded dispatches; `net` subtracts that of a 1x2x1 dispatch (encoding, launch gaps).
use super::*;
use crate::backend::Backend;
use std::time::Instant;

fn secs_per_op(b: &WgpuBackend, plan: Plan, x: &Tensor, ws: &[Tensor], y: &Tensor, iters: usize) -> Result<f64> {
    for i in 0..iters {
        launch(b, plan, &[x, &ws[i % ws.len()]], &[y], false)?;
    }
    let t = Instant::now();
    b.wait()?;
    Ok(t.elapsed().as_secs_f64() / iters as f64)
}

/// Warm up, then about `budget` seconds of timed dispatches.
fn measure(b: &WgpuBackend, plan: Plan, x: &Tensor, ws: &[Tensor], y: &Tensor, budget: f64) -> Result<f64> {
    let probe = secs_per_op(b, plan, x, ws, y, 3)?;
    let iters = ((budget / probe) as usize).clamp(3, 2000);
    secs_per_op(b, plan, x, ws, y, iters)
}

fn candidates(m: usize) -> Vec<Plan> {
    let mut v = vec![];
    if m == 1 {
        for (wg, r, u) in [
            (64, 2, 4),
            (128, 2, 4),
            (128, 1, 8),
            (64, 4, 2),
            (64, 1, 4),
            (256, 2, 4),
        ] {
            v.push(Plan::Matvec {
                wg,
                r,
                mr: 1,
                u,
                sg: true,
            });
        }
        v.push(Plan::Matvec {
            wg: 64,
            r: 2,
            mr: 1,
            u: 4,
            sg: false,
        });
        return v;
    }
    for mr in [1u32, 2, 4, 8, 16, 32, 64] {
        for r in [1u32, 2, 4, 8] {
            if mr as usize <= m.next_power_of_two() && r * mr <= MATVEC_MAX_ACC && r * mr >= 2 {
                v.push(Plan::Matvec {
                    wg: 64,
                    r,
                    mr,
                    u: 4,
                    sg: true,
                });
            }
        }
    }
    v
}

#[test]
#[ignore = "a timing sweep for tuning plans on a real GPU (WGLLM_BENCH_DEVICE), not a check"]
fn sweep() {
    let want = std::env::var("WGLLM_BENCH_DEVICE")
        .unwrap_or_default()
        .to_ascii_lowercase();
    use DType::*;
    // Qwen3-0.6B's projections (q, gate/up, down, LM head) at decode batch sizes, then 8B-class
    let shapes = [
        (1, 1024, 3072, BF16),
        (1, 1024, 151936, BF16),
        (1, 4096, 4096, BF16),
        (8, 1024, 6144, F16),
        (32, 1024, 6144, F16),
        (64, 1024, 2048, F16),
        (64, 1024, 6144, F16),
        (64, 3072, 1024, F16),
        (64, 1024, 151936, F16),
        (64, 4096, 4096, BF16),
        (512, 1024, 3072, BF16),
    ];
    let t0 = Instant::now();
    for b in WgpuBackend::all().into_iter().filter(|b| b.name().contains(&want)) {
        let cpu = b.info.device_type == wgpu::DeviceType::Cpu;
        let gbs = b
            .read_bandwidth(
                (if cpu { 4usize } else { 256 } << 20).min(b.caps.max_binding as usize),
                50,
            )
            .unwrap();
        println!(
            "{} ({:?}): read_sweep {:.0} GB/s, subgroup {} ({}..{})",
            b.name(),
            b.info.backend,
            gbs / 1e9,
            b.caps.subgroup,
            b.caps.subgroup_min,
            b.caps.subgroup_max
        );
        let budget = if cpu { 1e-3 } else { 0.03 };
        let tiny = (
            b.alloc(F32, &[1, 2]).unwrap(),
            vec![b.alloc(BF16, &[1, 2]).unwrap()],
            b.alloc(F32, &[1, 1]).unwrap(),
        );
        let tiny_plan = Plan::Matvec {
            wg: 64,
            r: 1,
            mr: 1,
            u: 1,
            sg: false,
        };
        for (m, k, n, wd) in shapes {
            if cpu && m * k * n > 1 << 24 {
                continue;
            }
            let wbytes = n * k * wd.size();
            let copies = ((256usize << 20) / wbytes).clamp(1, 64);
            let x = b.alloc(F32, &[m, k]).unwrap();
            let ws: Vec<Tensor> = (0..copies).map(|_| b.alloc(wd, &[n, k]).unwrap()).collect();
            let y = b.alloc(F32, &[m, n]).unwrap();
            let flops = 2.0 * (m * k * n) as f64;
            let chosen = plan(&b, m, k, n);
            let mut rows = vec![];
            let mut empty = f64::MAX;
            for p in candidates(m).into_iter().filter(|&p| fits(&b, p)) {
                empty = empty.min(measure(&b, tiny_plan, &tiny.0, &tiny.1, &tiny.2, budget / 10.0).unwrap());
                match measure(&b, p, &x, &ws, &y, budget) {
                    Ok(t) => rows.push((t, p)),
                    Err(e) => println!("  {} failed: {e}", p.variant()),
                }
            }
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            println!(
                "M{m} K{k} N{n} w{wd} ({copies} copies, empty dispatch {:.1} us, {:.0} s):",
                empty * 1e6,
                t0.elapsed().as_secs_f64()
            );
            for (i, (t, p)) in rows.iter().enumerate() {
                let net = (t - empty).max(1e-9);
                if i < 5 || *p == chosen || i + 1 == rows.len() {
                    println!(
                        "  {:<22} {:>9.1} us  net {:>9.1} us  {:>6.0} GB/s  {:>6.1} TFLOP/s{}",
                        p.variant(),
                        t * 1e6,
                        net * 1e6,
                        wbytes as f64 / net / 1e9,
                        flops / net / 1e12,
                        if *p == chosen { "  <- plan()" } else { "" }
                    );
                }
            }
        }
    }
}
