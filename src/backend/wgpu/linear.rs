//! linear: y[M, N] = x[M, K] · W[N, K]ᵀ for every float dtype of x, w and y (f32 accumulation).
//!
//! Two kernels, both prefixed with shaders/linear.wgsl (Params and the pair loaders), their
//! inner loops unrolled into straight-line code by `matvec_body` / `gemm_body`:
//! * `matvec` (shaders/matvec.wgsl), M <= 64 (decode, small batches): memory-bound on W. A
//!   workgroup of WG threads owns R weight rows and MR x rows; its threads stride over K together
//!   a pair of elements (one word of a 16-bit W) per row and step, U steps a trip, and reduce with
//!   subgroup shuffles (`sg` variant, where the adapter has subgroups) or a workgroup-memory tree.
//! * `gemm` (shaders/gemm.wgsl), M > 64 (prefill): BM x BN output tiles staged through workgroup
//!   memory BK at a time (next step's loads issued before this step's sums), TM x TN per thread:
//!   64x64 (4x4), 128x64 (8x4) or 128x128 (8x8) by how many tiles there are.
//!
//! `plan` picks the kernel and its shape; `linear::sweep` (an ignored test) times the candidates.
//! Any element offsets and any M, N, K are handled (16-bit rows of odd K start mid-word).
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

const COMMON: &str = include_str!("../../../shaders/linear.wgsl");
const MATVEC: &str = include_str!("../../../shaders/matvec.wgsl");
/// The subgroup sum of the matvec entries' `sg` variants (here and quant.rs).
pub(super) const SG_SUM: &str = include_str!("../../../shaders/sg_sum.wgsl");
const GEMM: &str = include_str!("../../../shaders/gemm.wgsl");

/// Largest M that goes to the matvec kernel (in workgroups of up to 4 x rows).
const MATVEC_MAX_M: usize = 64;
/// Accumulators per thread in matvec (R * MR); bounds its workgroup memory to 8 * WG floats.
const MATVEC_MAX_ACC: u32 = 8;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    m: u32,
    n: u32,
    k: u32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

/// A kernel and its shape parameters (each a different pipeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Plan {
    Matvec {
        wg: u32,
        r: u32,
        mr: u32,
        u: u32,
        sg: bool,
    },
    Gemm {
        bm: u32,
        bn: u32,
        bk: u32,
        tm: u32,
        tn: u32,
    },
}

impl Plan {
    fn variant(&self) -> String {
        match *self {
            Plan::Matvec { wg, r, mr, u, sg } => format!("wg{wg}r{r}m{mr}u{u}{}", if sg { "sg" } else { "" }),
            Plan::Gemm { bm, bn, bk, tm, tn } => format!("t{bm}x{bn}k{bk}u{tm}x{tn}"),
        }
    }
}

/// The WGSL body of `plan` (shared prefix + kernel, generated lines filled in), built once per
/// plan and kept for the process (a handful of plans per model).
fn body(plan: Plan) -> &'static str {
    static CACHE: OnceLock<Mutex<HashMap<Plan, &'static str>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry(plan).or_insert_with(|| {
        let src = match plan {
            Plan::Matvec { r, mr, u, sg, .. } => matvec_body(r, mr, u, sg),
            Plan::Gemm { bm, bn, bk, tm, tn } => {
                let wg = (bm / tm) * (bn / tn);
                gemm_body(tm / 4, tn / 4, bm * bk / 2 / wg, bn * bk / 2 / wg)
            }
        };
        Box::leak(format!("{COMMON}\n{src}").into_boxed_str())
    })
}

/// Replaces each line `//@name` of `src` with the code given for `name` (indented alike).
fn fill(src: &str, parts: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    for line in src.lines() {
        let t = line.trim();
        match t
            .strip_prefix("//@")
            .and_then(|name| parts.iter().find(|(n, _)| *n == name))
        {
            Some((_, code)) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                for l in code.lines() {
                    out.push_str(indent);
                    out.push_str(l);
                    out.push('\n');
                }
            }
            None => {
                assert!(!t.starts_with("//@"), "linear: unfilled template line {t}");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// shaders/matvec.wgsl with its `//@` lines unrolled over r < R, i < MR, u < U.
fn matvec_body(r: u32, mr: u32, u: u32, sg: bool) -> String {
    let (rs, is) = (0..r, 0..mr);
    let accs = || rs.clone().flat_map(|r| is.clone().map(move |i| (r, i)));
    let mut decl = String::new();
    for r in rs.clone() {
        decl += &format!("let wr{r} = p.offs[0].y + min(n0 + {r}u, p.n - 1u) * p.k;\n");
    }
    for i in is.clone() {
        decl += &format!("let xr{i} = p.offs[0].x + min(m0 + {i}u, p.m - 1u) * p.k;\n");
    }
    for (r, i) in accs() {
        decl += &format!("var a{r}_{i} = 0.0;\n");
    }
    let trip = |steps: u32| {
        let mut c = String::new();
        for s in 0..steps {
            c += &format!("let e{s} = 2u * (j + {s}u * WG);\n");
            for i in is.clone() {
                c += &format!("let x{s}_{i} = x_pair(xr{i} + e{s});\n");
            }
            for r in rs.clone() {
                c += &format!("let w{s}_{r} = w_pair(wr{r} + e{s});\n");
            }
        }
        for (r, i) in accs() {
            let terms: Vec<String> = (0..steps).map(|s| format!("dot(x{s}_{i}, w{s}_{r})")).collect();
            c += &format!("a{r}_{i} += {};\n", terms.join(" + "));
        }
        c
    };
    let mut odd = String::new();
    for r in rs.clone() {
        odd += &format!("let wl{r} = ld_w(min(n0 + {r}u, p.n - 1u) * p.k + kl);\n");
    }
    for (r, i) in accs() {
        odd += &format!("a{r}_{i} += ld_x(min(m0 + {i}u, p.m - 1u) * p.k + kl) * wl{r};\n");
    }
    let mut to_red = String::new();
    for (r, i) in accs() {
        let slot = (r * mr + i) as usize;
        to_red += &if sg {
            format!("{{ let s = sg_sum(a{r}_{i}, sgs); if (sgi == 0u) {{ red[{slot}u * WG + sgid] = s; }} }}\n")
        } else {
            format!("red[{slot}u * WG + lid] = a{r}_{i};\n")
        };
    }
    let parts = [
        ("decl", decl),
        ("trip_U", trip(u)),
        ("trip_1", trip(1)),
        ("odd", odd),
        ("to_red", to_red),
    ];
    fill(
        &format!("{}{}", if sg { SG_SUM } else { "" }, select_sg(MATVEC, sg)),
        &parts,
    )
}

/// shaders/gemm.wgsl with its `//@` lines unrolled over the micro-tile (AM x 4 rows, AN vec4s)
/// and over the `ap` / `bp` pairs of x / w a thread stages per K step.
fn gemm_body(am: u32, an: u32, ap: u32, bp: u32) -> String {
    let tile = || (0..am).flat_map(move |h| (0..4).flat_map(move |i| (0..an).map(move |c| (h, i, c))));
    let (mut decl, mut load, mut stage, mut fma, mut store) = (
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    );
    for (x, n, pairs, tile_pair, sh, first) in [
        ("a", "x", ap, "x_tile_pair", "As", "mt"),
        ("b", "w", bp, "w_tile_pair", "Bs", "nt"),
    ] {
        let stride = if x == "a" { "SA" } else { "SB" };
        for q in 0..pairs {
            decl += &format!("let r{x}{q} = (lid + {q}u * WG) / PAIRS;\nlet k{x}{q} = ((lid + {q}u * WG) % PAIRS) * 2u;\nvar p{n}{q} = vec2<f32>();\n");
            load += &format!("p{n}{q} = {tile_pair}({first} + r{x}{q}, kn + k{x}{q});\n");
            stage += &format!("{{ let o = k{x}{q} * {stride} + r{x}{q}; {sh}[o >> 2u][o & 3u] = p{n}{q}.x; {sh}[(o + {stride}) >> 2u][(o + {stride}) & 3u] = p{n}{q}.y; }}\n");
        }
    }
    for h in 0..am {
        fma += &format!("let a{h} = As[(kk * SA + {h}u * HM + ty * 4u) >> 2u];\n");
    }
    for c in 0..an {
        fma += &format!("let b{c} = Bs[(kk * SB + {c}u * HN + tx * 4u) >> 2u];\n");
    }
    for (h, i, c) in tile() {
        let lane = ["x", "y", "z", "w"][i as usize];
        decl += &format!("var c{h}_{i}_{c} = vec4<f32>();\n");
        fma += &format!("c{h}_{i}_{c} += a{h}.{lane} * b{c};\n");
        store += &format!("store4(mt + {h}u * HM + ty * 4u + {i}u, nt + {c}u * HN + tx * 4u, c{h}_{i}_{c});\n");
    }
    fill(
        GEMM,
        &[
            ("decl", decl),
            ("load", load),
            ("stage", stage),
            ("fma", fma),
            ("store", store),
        ],
    )
}

/// Keeps the lines of `#ifdef_sg .. #else_sg .. #endif_sg` blocks that belong to `sg`.
pub(super) fn select_sg(src: &str, sg: bool) -> String {
    let mut out = String::with_capacity(src.len());
    let mut keep = true;
    for line in src.lines() {
        match line.trim() {
            "#ifdef_sg" => keep = sg,
            "#else_sg" => keep = !sg,
            "#endif_sg" => keep = true,
            _ if keep => {
                out.push_str(line);
                out.push('\n');
            }
            _ => {}
        }
    }
    out
}

fn kind(d: DType) -> u32 {
    match d {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
        _ => unreachable!("linear: {d} is not a float dtype"),
    }
}

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    if desc.inputs[1].dtype.is_quant() {
        return super::quant::supports(b, desc);
    }
    // Element indices (offset included) are u32 in the kernels.
    if desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .any(|t| t.numel() > u32::MAX as usize / 2)
    {
        return Support::No("an operand has more than 2^31 elements".into());
    }
    Support::Yes
}

/// `WGLLM_MATVEC=WG,R,U` (A/B sweeps of the float matvec): WG a power of two in 32..=256, R in
/// 1..=8, U in 1..=8; else None.
fn matvec_override() -> Option<(u32, u32, u32)> {
    let &[wg, r, u] = super::kernel::env_u32s("WGLLM_MATVEC", 3)?.as_slice() else {
        return None;
    };
    (wg.is_power_of_two() && (32..=256).contains(&wg) && (1..=8).contains(&r) && (1..=8).contains(&u))
        .then_some((wg, r, u))
}

/// The kernel for an M x K x N problem on `b`.
fn plan(b: &WgpuBackend, m: usize, _k: usize, n: usize) -> Plan {
    // Tuned on an H200 through Vulkan (linear::sweep, K and N 1024..151936, bf16/f16/f32 W).
    if m <= MATVEC_MAX_M {
        // 64 threads, 2 weight rows and up to 4 x rows a workgroup, 4 steps a trip: at or within
        // ~10% of the best candidate for M = 1 (3.4-4.2 TB/s) and the best for M = 2..64, where
        // it beat the tiled kernel 2-45x (that one has too few workgroups to hide latency there).
        let mr = m.min(4) as u32;
        let (wg, r, u) = matvec_override()
            .filter(|&(_, r, _)| r * mr <= MATVEC_MAX_ACC)
            .unwrap_or((64, 2, 4));
        return Plan::Matvec {
            wg,
            r,
            mr,
            u,
            sg: b.caps.subgroup,
        };
    }
    // Bigger tiles once there are enough of them for every multiprocessor (17-25 TFLOP/s).
    let tiles = |bm: usize, bn: usize| m.div_ceil(bm) * n.div_ceil(bn);
    if tiles(128, 128) >= 512 {
        Plan::Gemm {
            bm: 128,
            bn: 128,
            bk: 16,
            tm: 8,
            tn: 8,
        }
    } else if tiles(128, 64) >= 256 {
        Plan::Gemm {
            bm: 128,
            bn: 64,
            bk: 16,
            tm: 8,
            tn: 4,
        }
    } else {
        Plan::Gemm {
            bm: 64,
            bn: 64,
            bk: 16,
            tm: 4,
            tn: 4,
        }
    }
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::Linear = op else {
        unreachable!("linear::record got {}", op.name())
    };
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    if i[1].dtype.is_quant() {
        return super::quant::record_linear(b, i, o);
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    launch(b, plan(b, m, k, n), i, o)
}

fn launch(b: &WgpuBackend, plan: Plan, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    for t in [i[0], i[1], o[0]] {
        if t.offset + t.numel() + 1 > u32::MAX as usize {
            return Err(Error::Other(format!("linear: {t:?} reaches past u32 element indices")));
        }
    }
    let bindings = vec![read("x", i[0].dtype), read("w", i[1].dtype), write("y", o[0].dtype)];
    // Every pair load starts on a word: no 16-bit operand has an odd row start.
    let aligned = [i[0], i[1]]
        .iter()
        .all(|t| t.dtype.size() == 4 || (t.offset % 2 == 0 && k % 2 == 0));
    let mut consts = vec![
        ("X_KIND", format!("{}u", kind(i[0].dtype))),
        ("W_KIND", format!("{}u", kind(i[1].dtype))),
        ("ALIGNED", aligned.to_string()),
    ];
    let (entry, body, groups) = match plan {
        Plan::Matvec { wg, r, mr, u, .. } => {
            assert!(r * mr <= MATVEC_MAX_ACC && wg.is_power_of_two() && u >= 1);
            consts.extend([("WG", wg), ("R", r), ("MR", mr), ("U", u)].map(|(c, v)| (c, format!("{v}u"))));
            let groups = n.div_ceil(r as usize) * m.div_ceil(mr as usize);
            ("matvec", body(plan), groups)
        }
        Plan::Gemm { bm, bn, bk, tm, tn } => {
            let wg = (bm / tm) * (bn / tn);
            assert!(matches!(tm, 4 | 8) && matches!(tn, 4 | 8) && bk % 2 == 0);
            assert!(
                (bm * bk / 2) % wg == 0 && (bn * bk / 2) % wg == 0,
                "gemm tile loads must divide evenly"
            );
            consts.extend(
                [("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn), ("WG", wg)]
                    .map(|(c, v)| (c, format!("{v}u"))),
            );
            ("gemm", body(plan), m.div_ceil(bm as usize) * n.div_ceil(bn as usize))
        }
    };
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    let key = KernelKey {
        entry,
        bindings,
        variant: format!("{}{}", plan.variant(), if aligned { "a" } else { "" }),
    };
    let p = Params {
        offs: [0; 8],
        m: m as u32,
        n: n as u32,
        k: k as u32,
        pad: 0,
    };
    b.dispatch(
        &key,
        body,
        &consts,
        bytemuck::bytes_of(&p),
        &[i[0], i[1], o[0]],
        grid(groups as u32),
    )
}

#[cfg(test)]
mod tests {
    //! The plans `record` does not pick for the harness's shapes on llvmpipe (the workgroup-memory
    //! reduction where subgroups exist, 128x128 tiles, other R / MR), and tensors at nonzero
    //! offsets, each against the CPU reference.
    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::backend::Backend;
    use crate::parity::case::{input, Init};
    use crate::parity::compare::{compare, tolerance};

    fn check(
        b: &WgpuBackend,
        plan: Plan,
        (xd, wd, yd): (DType, DType, DType),
        (m, k, n): (usize, usize, usize),
        off: usize,
    ) {
        let xi = input(
            xd,
            &[m, k],
            Init::Normal {
                seed: (m * 31 + k * 7 + n) as u64,
                std: 1.0,
            },
        );
        let wi = input(
            wd,
            &[n, k],
            Init::Normal {
                seed: (k * 13 + n) as u64,
                std: 1.0 / (k as f32).sqrt(),
            },
        );
        let cpu = CpuBackend::new();
        let (cx, cw, cy) = (
            cpu.alloc(xd, &[m, k]).unwrap(),
            cpu.alloc(wd, &[n, k]).unwrap(),
            cpu.alloc(yd, &[m, n]).unwrap(),
        );
        cpu.upload(&cx, &xi.bytes()).unwrap();
        cpu.upload(&cw, &wi.bytes()).unwrap();
        cpu.run(&Op::Linear, &[&cx, &cw], &[&cy]).unwrap();
        let want = cpu.download(&cy).unwrap();
        let at = |d: DType, shape: &[usize]| {
            let whole = b.alloc(d, &[off + shape.iter().product::<usize>() + 2]).unwrap();
            whole.view(off, shape).unwrap()
        };
        let (gx, gw, gy) = (at(xd, &[m, k]), at(wd, &[n, k]), at(yd, &[m, n]));
        b.upload(&gx, &xi.bytes()).unwrap();
        b.upload(&gw, &wi.bytes()).unwrap();
        launch(b, plan, &[&gx, &gw], &[&gy]).unwrap();
        b.flush().unwrap();
        let got = b.download(&gy).unwrap();
        let r = compare(yd, &got, &want, tolerance("linear", yd));
        assert!(
            r.is_ok(),
            "{plan:?} {xd}/{wd}/{yd} {m}x{k}x{n} +{off}: {}",
            r.unwrap_err()
        );
    }

    #[test]
    fn forced_plans_match_cpu() {
        let Some(b) = WgpuBackend::all().into_iter().next() else {
            eprintln!("no wgpu adapter: skipped");
            return;
        };
        use DType::*;
        let dts = [(F32, BF16, F32), (F16, F16, F16), (BF16, F32, BF16)];
        let mut plans = vec![];
        for sg in [false, true] {
            if sg && !b.caps.subgroup {
                continue;
            }
            for (wg, r, mr, u) in [
                (64, 1, 1, 4),
                (256, 4, 1, 2),
                (64, 8, 1, 1),
                (128, 2, 3, 3),
                (64, 1, 8, 2),
            ] {
                plans.push((Plan::Matvec { wg, r, mr, u, sg }, mr as usize));
            }
        }
        plans.push((
            Plan::Gemm {
                bm: 128,
                bn: 128,
                bk: 16,
                tm: 8,
                tn: 8,
            },
            9,
        ));
        plans.push((
            Plan::Gemm {
                bm: 64,
                bn: 64,
                bk: 16,
                tm: 4,
                tn: 4,
            },
            5,
        ));
        plans.push((
            Plan::Gemm {
                bm: 64,
                bn: 128,
                bk: 32,
                tm: 4,
                tn: 8,
            },
            2,
        ));
        for (plan, mr) in plans {
            for dt in dts {
                for (k, n) in [(7, 5), (4097, 13), (300, 131)] {
                    // m: one chunk of the plan's rows (also at an offset), and a ragged last chunk.
                    check(&b, plan, dt, (mr, k, n), 0);
                    check(&b, plan, dt, (mr, k, n), 6);
                    check(&b, plan, dt, (2 * mr + 1, k, n), 2);
                }
            }
        }
    }
}

#[cfg(test)]
mod sweep {
    //! `WGLLM_BENCH_DEVICE=nvidia cargo test --release --lib linear::sweep -- --ignored --nocapture`:
    //! the time of each candidate plan on model shapes, to tune `plan`. Weights rotate over enough
    //! copies to stream from memory rather than L2. A time is submit-to-idle wall time over up to
    //! 2000 recorded dispatches; `net` subtracts that of a 1x2x1 dispatch (encoding, launch gaps).
    use super::*;
    use crate::backend::Backend;
    use std::time::Instant;

    fn secs_per_op(b: &WgpuBackend, plan: Plan, x: &Tensor, ws: &[Tensor], y: &Tensor, iters: usize) -> Result<f64> {
        for i in 0..iters {
            launch(b, plan, &[x, &ws[i % ws.len()]], &[y])?;
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
        for mr in [1u32, 2, 4, 8] {
            for r in [1u32, 2] {
                if mr as usize <= m && r * mr <= MATVEC_MAX_ACC {
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
        for (bm, bn, bk, tm, tn) in [
            (64, 64, 16, 4, 4),
            (64, 64, 32, 4, 4),
            (64, 128, 16, 4, 8),
            (128, 64, 16, 8, 4),
            (128, 128, 16, 8, 8),
        ] {
            v.push(Plan::Gemm { bm, bn, bk, tm, tn });
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
        let shapes = [
            (1, 1024, 3072, BF16),
            (1, 1024, 151936, BF16),
            (1, 4096, 4096, BF16),
            (1, 14336, 4096, BF16),
            (1, 4096, 4096, F32),
            (2, 4096, 4096, BF16),
            (4, 4096, 4096, BF16),
            (8, 4096, 4096, BF16),
            (16, 4096, 4096, BF16),
            (32, 4096, 4096, BF16),
            (64, 4096, 4096, BF16),
            (512, 1024, 3072, BF16),
            (512, 4096, 4096, BF16),
            (2048, 4096, 4096, BF16),
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
                for p in candidates(m) {
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
}
