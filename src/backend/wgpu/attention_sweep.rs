//! `WGLLM_BENCH_DEVICE=nvidia cargo test --release --lib attention_sweep -- --ignored --nocapture`:
//! the prefill attention tile (attention.rs `TILES`) against other shapes the generated loop
//! computes. Each candidate that fits the device is first checked against the CPU reference
//! (a ragged block of queries after cached keys, head_dim 128 and 64: nmse above 1e-9 fails),
//! then timed on Qwen3-0.6B's prefill (16 query heads over 8 kv heads, head_dim 128, f32 q, k, v
//! as the lone engine's pools hold them): GPU time a call in a chain of dependent ones
//! (timestamps, profile.rs) and wall time, with the causal FLOPs a second; the first tile also
//! with its keys in partitions of `PARTS` keys (attention_parts.rs). What it prints is what
//! `TILES` and `PART_KEYS` are chosen from.
use super::attention::{prefill_plan, record_with, TILES};
use super::attention_prefill::Tile;
use super::WgpuBackend;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::dtype::DType;
use crate::op::Op;
use crate::parity::case::{input, Init};
use crate::parity::compare::{compare, Tol};
use crate::tensor::Tensor;
use std::time::Instant;

/// The shapes tried besides `TILES`: more rows or keys a thread in the score tile (4 x 4, 8 x 2,
/// 8 x 4: fewer workgroup-memory loads a product than 4 x 2) with fewer threads, and 32-key blocks.
const MORE: [(usize, usize, usize, usize); 8] = [
    (64, 64, 16, 4),
    (64, 64, 16, 2),
    (64, 32, 32, 4),
    (32, 32, 32, 4),
    (128, 32, 32, 2),
    (128, 32, 32, 4),
    (64, 64, 8, 2),
    (128, 64, 8, 1),
];

/// Keys a partition tried on the first of `TILES` (attention_parts.rs; 128 splits the checks'
/// 187 keys in two).
const PARTS: [usize; 4] = [128, 256, 512, 1024];

fn candidates() -> Vec<Tile> {
    let mut v: Vec<Tile> = TILES.to_vec();
    for (nt, bq, bk, tn) in MORE {
        let t = Tile {
            nt,
            bq,
            bk,
            tn,
            kp: 0,
            hg: 1,
        };
        assert!(t.valid(), "{t:?} is not a shape the loop computes");
        if !v.contains(&t) {
            v.push(t);
        }
    }
    v.extend(PARTS.map(|kp| Tile { kp, ..TILES[0] }));
    v
}

fn fits(b: &WgpuBackend, t: Tile, dh: usize) -> bool {
    t.smem(dh) <= b.caps.max_workgroup_storage as usize && t.nt <= b.caps.max_invocations as usize
}

/// q [T, Hq, Dh], k and v [S, Hkv, Dh] (S = n_past + T), f32 ~ N(0, 1), as bytes.
fn operands(t: usize, n_past: usize, hq: usize, hkv: usize, dh: usize) -> [Vec<u8>; 3] {
    let s = n_past + t;
    let seed = (t * 131 + n_past * 17 + dh) as u64;
    let f = |shape: &[usize], k: u64| {
        input(
            DType::F32,
            shape,
            Init::Normal {
                seed: seed + k,
                std: 1.0,
            },
        )
        .bytes()
    };
    [f(&[t, hq, dh], 0), f(&[s, hkv, dh], 1), f(&[s, hkv, dh], 2)]
}

/// The operands on `dev`, and an output.
fn on(
    dev: &dyn Backend,
    bytes: &[Vec<u8>; 3],
    t: usize,
    n_past: usize,
    (hq, hkv, dh): (usize, usize, usize),
) -> [Tensor; 4] {
    let s = n_past + t;
    let shapes = [[t, hq, dh], [s, hkv, dh], [s, hkv, dh]];
    let ts: Vec<Tensor> = shapes
        .iter()
        .zip(bytes)
        .map(|(sh, by)| {
            let x = dev.alloc(DType::F32, sh).unwrap();
            dev.upload(&x, by).unwrap();
            x
        })
        .collect();
    let o = dev.alloc(DType::F32, &[t, hq, dh]).unwrap();
    [ts[0].clone(), ts[1].clone(), ts[2].clone(), o]
}

fn op(n_past: usize, dh: usize) -> Op {
    Op::Attention {
        n_past,
        scale: 1.0 / (dh as f32).sqrt(),
    }
}

/// Each candidate against the CPU reference on T = 150 queries after 37 cached keys (a partial
/// query block, partial key blocks, the causal mask inside blocks), 4 query heads over 2 kv heads.
fn checks(b: &WgpuBackend, tiles: &[Tile]) -> Vec<String> {
    let (t, n_past, hq, hkv) = (150, 37, 4, 2);
    let mut fails = vec![];
    for dh in [128, 64] {
        let bytes = operands(t, n_past, hq, hkv, dh);
        let cpu = CpuBackend::new();
        let [q, k, v, o] = on(&cpu, &bytes, t, n_past, (hq, hkv, dh));
        cpu.run(&op(n_past, dh), &[&q, &k, &v], &[&o]).unwrap();
        let want = cpu.download(&o).unwrap();
        let [q, k, v, o] = on(b, &bytes, t, n_past, (hq, hkv, dh));
        for &tl in tiles.iter().filter(|&&tl| fits(b, tl, dh)) {
            let name = prefill_plan(b, tl, t, dh).variant;
            let got = record_with(b, &op(n_past, dh), &[&q, &k, &v], &[&o], Some(tl))
                .and_then(|_| b.flush())
                .and_then(|_| b.download(&o))
                .map_err(|e| e.to_string())
                .and_then(|got| compare(DType::F32, &got, &want, Tol::Nmse(1e-9)));
            match got {
                Ok(c) => println!("  check {name:<28} nmse {:.2e}", c.nmse),
                Err(e) => {
                    println!("  check {name:<28} FAIL {e}");
                    fails.push(format!("{name}: {e}"));
                }
            }
        }
    }
    fails
}

/// Wall and GPU seconds a call of `tl` (its dispatch, and the merge where it has key partitions)
/// over `iters` dependent calls (GPU: None without timestamps).
fn time(
    b: &WgpuBackend,
    tl: Tile,
    x: &[Tensor; 4],
    n_past: usize,
    dh: usize,
    iters: usize,
) -> crate::error::Result<(f64, Option<f64>)> {
    let run = |n: usize| -> crate::error::Result<f64> {
        for _ in 0..n {
            record_with(b, &op(n_past, dh), &[&x[0], &x[1], &x[2]], &[&x[3]], Some(tl))?;
        }
        let t0 = Instant::now();
        b.flush()?;
        b.sync()?;
        Ok(t0.elapsed().as_secs_f64() / n as f64)
    };
    run(1)?; // compiles the pipeline
    let wall = run(iters)?;
    if !b.set_profiling(true)? {
        return Ok((wall, None));
    }
    run(iters)?;
    let ns: f64 = b.profile().iter().map(|k| k.ns).sum();
    b.set_profiling(false)?;
    Ok((wall, Some(ns * 1e-9 / iters as f64)))
}

#[test]
#[ignore = "a timing sweep for the prefill attention tile on a real GPU (WGLLM_BENCH_DEVICE), not a check"]
fn sweep() {
    let want = std::env::var("WGLLM_BENCH_DEVICE")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let tiles = candidates();
    let t0 = Instant::now();
    let mut fails = vec![];
    let mut checked = 0;
    for b in WgpuBackend::all().into_iter().filter(|b| b.name().contains(&want)) {
        let cpu = b.info.device_type == wgpu::DeviceType::Cpu;
        println!(
            "{} ({:?}): workgroup memory {}, subgroup {} ({}..{})",
            b.name(),
            b.info.backend,
            b.caps.max_workgroup_storage,
            b.caps.subgroup,
            b.caps.subgroup_min,
            b.caps.subgroup_max
        );
        let f = checks(&b, &tiles);
        checked += 1;
        fails.extend(f.into_iter().map(|e| format!("{}: {e}", b.name())));
        let (hq, hkv, dh) = (16, 8, 128);
        // (T, n_past): fresh prompts, and a short chunk after a long cached prefix (a chat's next
        // turn), whose few query blocks are what the key partitions are for
        let lens: &[(usize, usize)] = if cpu {
            &[(128, 0)]
        } else {
            &[(512, 0), (2048, 0), (256, 3840), (64, 8128)]
        };
        for &(t, n_past) in lens {
            let bytes = operands(t, n_past, hq, hkv, dh);
            let x = on(&b, &bytes, t, n_past, (hq, hkv, dh));
            // q.k and p.v over the causal triangle after the prefix: 2 products of Dh
            // multiply-adds a (query, key)
            let pairs = ((t * (t + 1) / 2 + t * n_past) * hq) as f64;
            let flops = 4.0 * dh as f64 * pairs;
            let iters = if cpu {
                1
            } else {
                (2e8 / (t * (t + n_past)) as f64).clamp(3.0, 200.0) as usize
            };
            let mut rows = vec![];
            for &tl in tiles.iter().filter(|&&tl| fits(&b, tl, dh)) {
                let name = prefill_plan(&b, tl, t, dh).variant;
                match time(&b, tl, &x, n_past, dh, iters) {
                    Ok((wall, gpu)) => rows.push((gpu.unwrap_or(wall), wall, gpu, name, tl)),
                    Err(e) => println!("  {name} failed: {e}"),
                }
            }
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            println!(
                "T{t} after {n_past} Hq{hq} Hkv{hkv} Dh{dh} f32 ({iters} dispatches each, {:.0} s):",
                t0.elapsed().as_secs_f64()
            );
            for (key, wall, gpu, name, tl) in rows {
                println!(
                    "  {name:<28} GPU {:>9.1} us  wall {:>9.1} us  {:>6.1} TFLOP/s  smem {:>5} B{}",
                    gpu.unwrap_or(f64::NAN) * 1e6,
                    wall * 1e6,
                    flops / key / 1e12,
                    tl.smem(dh),
                    if TILES.contains(&tl) { "  (TILES)" } else { "" }
                );
            }
        }
    }
    println!("sweep done in {:.0} s", t0.elapsed().as_secs_f64());
    assert!(checked > 0, "no adapter matched WGLLM_BENCH_DEVICE={want:?}");
    assert!(fails.is_empty(), "tile checks failed:\n{}", fails.join("\n"));
}
