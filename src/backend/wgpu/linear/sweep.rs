//! `WGLLM_BENCH_DEVICE=nvidia cargo test --release --lib linear::sweep -- --ignored --nocapture`:
//! the time of each candidate plan on model shapes, to tune `plan`. Weights rotate over enough
//! copies to stream from memory rather than L2. A time is submit-to-idle wall time over up to
//! 2000 recorded dispatches; `net` subtracts that of a 1x2x1 dispatch (encoding, launch gaps).
//! On an adapter with cooperative matrices the coop candidates (coop.rs) are first checked
//! (`coop_checks`: error against the CPU reference, rows independent of M) and then timed beside
//! the matvec's. `WGLLM_LINEAR_SWEEP=coop`: only the coop candidates and `plan`'s matvec.
use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::parity::case::{input, Init};
use std::time::Instant;

fn secs_per_op(b: &WgpuBackend, plan: Plan, x: &Tensor, ws: &[Tensor], y: &Tensor, iters: usize) -> Result<f64> {
    for i in 0..iters {
        launch(b, plan, &[x, &ws[i % ws.len()]], &[y], false, None, None)?;
    }
    let t = Instant::now();
    b.wait()?;
    Ok(t.elapsed().as_secs_f64() / iters as f64)
}

/// GPU time a dispatch of `plan` takes in a chain of dependent ones (profile.rs: each charged from
/// the previous one's end), over `iters` dispatches; None without timestamps.
fn gpu_secs_per_op(
    b: &WgpuBackend,
    plan: Plan,
    x: &Tensor,
    ws: &[Tensor],
    y: &Tensor,
    iters: usize,
) -> Result<Option<f64>> {
    if !b.set_profiling(true)? {
        return Ok(None);
    }
    secs_per_op(b, plan, x, ws, y, iters)?;
    let (ns, n) = b
        .profile()
        .iter()
        .fold((0.0, 0), |(t, n), k| (t + k.ns, n + k.dispatches));
    b.set_profiling(false)?;
    Ok(Some(ns * 1e-9 / n.max(1) as f64))
}

/// Warm up (and compile), then about `budget` seconds of timed dispatches.
fn measure(b: &WgpuBackend, plan: Plan, x: &Tensor, ws: &[Tensor], y: &Tensor, budget: f64) -> Result<f64> {
    secs_per_op(b, plan, x, ws, y, 1)?; // compiles the pipeline
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
            (64, 1, 8),
            (128, 1, 4),
            (256, 1, 2),
            (32, 1, 8),
            (32, 2, 4),
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

/// x ~ N(0, 1) and W ~ N(0, 1/K) as bytes, x of dtype f32.
fn operands(m: usize, k: usize, n: usize, wd: DType) -> (Vec<u8>, Vec<u8>) {
    let seed = (m * 31 + k * 7 + n) as u64;
    let x = input(DType::F32, &[m, k], Init::Normal { seed, std: 1.0 });
    let w = input(
        wd,
        &[n, k],
        Init::Normal {
            seed: seed + 1,
            std: 1.0 / (k as f32).sqrt(),
        },
    );
    (x.bytes(), w.bytes())
}

fn cpu_linear(m: usize, k: usize, n: usize, wd: DType, x: &[u8], w: &[u8]) -> Vec<f32> {
    let cpu = CpuBackend::new();
    let (cx, cw, cy) = (
        cpu.alloc(DType::F32, &[m, k]).unwrap(),
        cpu.alloc(wd, &[n, k]).unwrap(),
        cpu.alloc(DType::F32, &[m, n]).unwrap(),
    );
    cpu.upload(&cx, x).unwrap();
    cpu.upload(&cw, w).unwrap();
    cpu.run(&Op::Linear, &[&cx, &cw], &[&cy]).unwrap();
    DType::F32.decode_f32(&cpu.download(&cy).unwrap())
}

fn nmse(got: &[f32], want: &[f32]) -> f64 {
    let (mut e, mut s) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        e += (g as f64 - w as f64).powi(2);
        s += (w as f64).powi(2);
    }
    if e.is_nan() {
        f64::INFINITY
    } else {
        e / s.max(1e-300)
    }
}

/// x and W uploaded at element offsets `xo` / `wo` of larger buffers; y allocated.
fn device_operands(
    b: &WgpuBackend,
    (m, k, n, wd): (usize, usize, usize, DType),
    (xo, wo): (usize, usize),
    (x, w): (&[u8], &[u8]),
) -> (Tensor, Tensor, Tensor) {
    let gx = b
        .alloc(DType::F32, &[xo + m * k + 4])
        .unwrap()
        .view(xo, &[m, k])
        .unwrap();
    let gw = b.alloc(wd, &[wo + n * k + 8]).unwrap().view(wo, &[n, k]).unwrap();
    b.upload(&gx, x).unwrap();
    b.upload(&gw, w).unwrap();
    (gx, gw, b.alloc(DType::F32, &[m, n]).unwrap())
}

fn run_f32(b: &WgpuBackend, plan: Plan, x: &Tensor, w: &Tensor, y: &Tensor) -> std::result::Result<Vec<f32>, String> {
    launch(b, plan, &[x, w], &[y], false, None, None).map_err(|e| e.to_string())?;
    b.flush().map_err(|e| e.to_string())?;
    Ok(DType::F32.decode_f32(&b.download(y).map_err(|e| e.to_string())?))
}

/// Each coop candidate on `b` against the CPU reference (nmse printed, > 1e-11 fails) on
/// K1024 N3072 bf16 M64 (16-byte loads) and on ragged shapes at odd offsets (scalar loads, K and
/// N tails, f16 and bf16 W); then rows independent of M: row r of the M=64 run equals the same x
/// row run alone (M=1, r in 0, 7, 40, 63) and rows 40..56 run as M=17, byte for byte. Returns the
/// failures.
fn coop_checks(b: &WgpuBackend) -> Vec<String> {
    let mut fails = vec![];
    let t0 = Instant::now();
    let (m, k, n, wd) = (64, 1024, 3072, DType::BF16);
    let (xb, wb) = operands(m, k, n, wd);
    let want = cpu_linear(m, k, n, wd, &xb, &wb);
    let (gx, gw, gy) = device_operands(b, (m, k, n, wd), (0, 0), (&xb, &wb));
    let y1 = b.alloc(DType::F32, &[1, n]).unwrap();
    let y17 = b.alloc(DType::F32, &[17, n]).unwrap();
    let ragged: Vec<_> = [
        (19, 1003, 77, DType::BF16, 1, 2),
        (5, 40, 33, DType::F16, 0, 6),
        (33, 136, 130, DType::F16, 4, 8),
    ]
    .into_iter()
    .map(|(m, k, n, wd, xo, wo)| {
        let (xb, wb) = operands(m, k, n, wd);
        let want = cpu_linear(m, k, n, wd, &xb, &wb);
        let ops = device_operands(b, (m, k, n, wd), (xo, wo), (&xb, &wb));
        (format!("M{m} K{k} N{n} w{wd} x+{xo} w+{wo}"), ops, want)
    })
    .collect();
    println!("coop checks: references in {:.1} s", t0.elapsed().as_secs_f64());
    // the first M64 result of each KS: plans of one KS should give the same bits (printed, not failed)
    let mut by_ks: Vec<(u32, String, Vec<f32>)> = vec![];
    // each candidate at the adapter's matrix size and subgroup size (16 and 32 on NVIDIA, 8 and 8 on
    // Mesa 26's lavapipe)
    let on_b = coop::plans(b.caps.coop_tile, b.caps.subgroup_min);
    for c in on_b.into_iter().filter_map(|p| match p {
        Plan::Coop(c) if coop::fits(b, c) => Some(c),
        _ => None,
    }) {
        let plan = Plan::Coop(c);
        let v = c.variant();
        let got = match run_f32(b, plan, &gx, &gw, &gy) {
            Ok(g) => g,
            Err(e) => {
                fails.push(format!("{v}: {e}"));
                continue;
            }
        };
        let e = nmse(&got, &want);
        let mut line = format!("  {v:<26} nmse M64 K1024 N3072 {e:.2e}");
        if e.is_nan() || e > 1e-11 {
            fails.push(format!("{v}: nmse {e:.3e} on M64 K1024 N3072"));
        }
        for (name, (x, w, y), want) in &ragged {
            match run_f32(b, plan, x, w, y) {
                Ok(g) => {
                    let e = nmse(&g, want);
                    line += &format!(", {e:.1e}");
                    if e.is_nan() || e > 1e-11 {
                        fails.push(format!("{v}: nmse {e:.3e} on {name}"));
                    }
                }
                Err(e) => fails.push(format!("{v}: {name}: {e}")),
            }
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
        match by_ks.iter().find(|(ks, ..)| *ks == c.ks) {
            Some((_, first, y)) => {
                line += if bits(y) == bits(&got) {
                    "; bits = "
                } else {
                    "; bits differ from "
                };
                line += first;
            }
            None => by_ks.push((c.ks, v.clone(), got.clone())),
        }
        let mut same = true;
        for r in [0usize, 7, 40, 63] {
            let x1 = gx.view(r * k, &[1, k]).unwrap();
            match run_f32(b, plan, &x1, &gw, &y1) {
                Ok(g) => same &= bits(&g) == bits(&got[r * n..(r + 1) * n]),
                Err(e) => fails.push(format!("{v}: M1: {e}")),
            }
        }
        let x17 = gx.view(40 * k, &[17, k]).unwrap();
        match run_f32(b, plan, &x17, &gw, &y17) {
            Ok(g) => same &= bits(&g) == bits(&got[40 * n..57 * n]),
            Err(e) => fails.push(format!("{v}: M17: {e}")),
        }
        line += if same {
            "; rows identical across M 1/17/64"
        } else {
            "; ROWS DIFFER ACROSS M"
        };
        if !same {
            fails.push(format!("{v}: rows differ across M"));
        }
        println!("{line}");
    }
    println!("coop checks done in {:.1} s", t0.elapsed().as_secs_f64());
    fails
}

#[test]
#[ignore = "a timing sweep for tuning plans on a real GPU (WGLLM_BENCH_DEVICE), not a check"]
fn sweep() {
    let want = std::env::var("WGLLM_BENCH_DEVICE")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let coop_only = std::env::var("WGLLM_LINEAR_SWEEP").is_ok_and(|v| v == "coop");
    let m1_only = std::env::var("WGLLM_LINEAR_SWEEP").is_ok_and(|v| v == "m1");
    use DType::*;
    // Qwen3-0.6B's projections (q/k/v stacked, gate/up stacked, down, LM head; o and a 2048-wide
    // K) at decode and prefill batch sizes
    let shapes = [
        (1024, 3072, BF16),
        (1024, 6144, BF16),
        (3072, 1024, BF16),
        (2048, 1024, BF16),
        (1024, 151936, BF16),
    ];
    let ms: &[usize] = if m1_only { &[1] } else { &[1, 8, 16, 32, 64, 256, 2048] };
    let t0 = Instant::now();
    let mut fails = vec![];
    for b in WgpuBackend::all().into_iter().filter(|b| b.name().contains(&want)) {
        let cpu = b.info.device_type == wgpu::DeviceType::Cpu;
        let gbs = b
            .read_bandwidth(
                (if cpu { 4usize } else { 256 } << 20).min(b.caps.max_binding as usize),
                50,
            )
            .unwrap();
        println!(
            "{} ({:?}): read_sweep {:.0} GB/s, subgroup {} ({}..{}), cooperative_matrix {}, workgroup memory {}",
            b.name(),
            b.info.backend,
            gbs / 1e9,
            b.caps.subgroup,
            b.caps.subgroup_min,
            b.caps.subgroup_max,
            b.caps.cooperative_matrix,
            b.caps.max_workgroup_storage
        );
        if b.caps.cooperative_matrix {
            let f = coop_checks(&b);
            for e in &f {
                println!("  FAIL {e}");
            }
            fails.extend(f.into_iter().map(|e| format!("{}: {e}", b.name())));
        } else if coop_only {
            continue;
        }
        let budget = if cpu { 1e-3 } else { 0.02 };
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
        for (k, n, wd) in shapes {
            let wbytes = n * k * wd.size();
            let copies = ((256usize << 20) / wbytes).clamp(1, 64);
            let ws: Vec<Tensor> = (0..copies).map(|_| b.alloc(wd, &[n, k]).unwrap()).collect();
            for &m in ms {
                if cpu && m * k * n > 1 << 24 {
                    continue;
                }
                let (x, y) = match (b.alloc(F32, &[m, k]), b.alloc(F32, &[m, n])) {
                    (Ok(x), Ok(y)) => (x, y),
                    _ => {
                        println!("M{m} K{k} N{n}: cannot allocate x or y, skipped");
                        continue;
                    }
                };
                let flops = 2.0 * (m * k * n) as f64;
                let chosen = plan(&b, m, k, n, true);
                // (from 256 rows on only `plan`'s matvec: each takes milliseconds there)
                let mut cands = if coop_only || m >= 256 {
                    vec![chosen]
                } else {
                    candidates(m)
                };
                if !cands.contains(&chosen) {
                    cands.push(chosen);
                }
                let n_matvec = cands.len();
                cands.extend(coop::plans(b.caps.coop_tile, b.caps.subgroup_min));
                let mut rows = vec![];
                let mut empty = f64::MAX;
                let gpu_empty = gpu_secs_per_op(&b, tiny_plan, &tiny.0, &tiny.1, &tiny.2, 500).unwrap();
                for p in cands.into_iter().filter(|&p| fits(&b, p)) {
                    empty = empty.min(measure(&b, tiny_plan, &tiny.0, &tiny.1, &tiny.2, budget / 10.0).unwrap());
                    match measure(&b, p, &x, &ws, &y, budget) {
                        Ok(t) => {
                            let g = gpu_secs_per_op(&b, p, &x, &ws, &y, 500).unwrap();
                            rows.push((t, p, g))
                        }
                        Err(e) => println!("  {} failed: {e}", p.variant()),
                    }
                }
                rows.sort_by(|a, b| a.2.unwrap_or(a.0).total_cmp(&b.2.unwrap_or(b.0)));
                println!(
                    "M{m} K{k} N{n} w{wd} ({copies} copies, {n_matvec} matvec plans, empty dispatch {:.1} us, on the GPU {:.1} us, {:.0} s):",
                    empty * 1e6,
                    gpu_empty.unwrap_or(f64::NAN) * 1e6,
                    t0.elapsed().as_secs_f64()
                );
                let mut shown_matvec = 0;
                for (t, p, g) in &rows {
                    let net = (t - empty).max(1e-9);
                    let is_coop = matches!(p, Plan::Coop(_));
                    if !is_coop {
                        shown_matvec += 1;
                    }
                    if is_coop || shown_matvec <= 3 || m1_only || *p == chosen {
                        println!(
                            "  {:<26} {:>9.1} us  net {:>9.1} us  {:>6.0} GB/s  {:>6.1} TFLOP/s  GPU {:>7.1} us{}",
                            p.variant(),
                            t * 1e6,
                            net * 1e6,
                            wbytes as f64 / net / 1e9,
                            flops / net / 1e12,
                            g.unwrap_or(f64::NAN) * 1e6,
                            if *p == chosen { "  <- plan()" } else { "" }
                        );
                    }
                }
            }
        }
    }
    println!("sweep done in {:.0} s", t0.elapsed().as_secs_f64());
    assert!(fails.is_empty(), "coop checks failed:\n{}", fails.join("\n"));
}
