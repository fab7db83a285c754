//! linear: y[M, N] = x[M, K] · W[N, K]ᵀ for every float dtype of x, w and y (f32 accumulation).
//!
//! Two kernels, both prefixed with shaders/linear.wgsl (Params and the pair loaders):
//! * `matvec` (shaders/matvec.wgsl), M <= 4 (decode): memory-bound on W. A workgroup of WG
//!   threads owns R weight rows and all MR = M x rows; its threads stride over K together a pair
//!   of elements (one word of a 16-bit W) per row and step, and reduce with subgroup sums (`sg`
//!   variant, where the adapter has subgroups) or a workgroup-memory tree.
//! * `gemm` (shaders/gemm.wgsl), M > 4 (prefill): BM x BN output tiles staged through workgroup
//!   memory BK at a time, TM x TN per thread: 64x64 tiles (4x4 per thread) by default, 128x128
//!   (8x8) when there are enough of them to fill a large GPU.
//!
//! Any element offsets and any M, N, K are handled (16-bit rows of odd K start mid-word).
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};
use std::sync::OnceLock;

const COMMON: &str = include_str!("../../../shaders/linear.wgsl");
const MATVEC: &str = include_str!("../../../shaders/matvec.wgsl");
const GEMM: &str = include_str!("../../../shaders/gemm.wgsl");

/// Largest M that goes to the matvec kernel (all M rows in one workgroup).
const MATVEC_MAX_M: usize = 4;
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Matvec { wg: u32, r: u32, mr: u32, sg: bool },
    Gemm { bm: u32, bn: u32, bk: u32, tm: u32, tn: u32 },
}

impl Plan {
    fn variant(&self) -> String {
        match *self {
            Plan::Matvec { wg, r, mr, sg } => format!("wg{wg}r{r}m{mr}{}", if sg { "sg" } else { "" }),
            Plan::Gemm { bm, bn, bk, tm, tn } => format!("t{bm}x{bn}k{bk}u{tm}x{tn}"),
        }
    }
}

/// The matvec body with only the subgroup (`sg`) or only the workgroup-memory reduction kept,
/// and the gemm body, each behind the shared prefix. Built once.
fn bodies() -> &'static [String; 3] {
    static B: OnceLock<[String; 3]> = OnceLock::new();
    B.get_or_init(|| [format!("{COMMON}\n{}", select_sg(MATVEC, true)), format!("{COMMON}\n{}", select_sg(MATVEC, false)), format!("{COMMON}\n{GEMM}")])
}

/// Keeps the lines of `#ifdef_sg .. #else_sg .. #endif_sg` blocks that belong to `sg`.
fn select_sg(src: &str, sg: bool) -> String {
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

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    // Element indices (offset included) are u32 in the kernels.
    if desc.inputs.iter().chain(&desc.outputs).any(|t| t.numel() > u32::MAX as usize / 2) {
        return Support::No("an operand has more than 2^31 elements".into());
    }
    Support::Yes
}

/// The kernel for an M x K x N problem on `b`.
fn plan(b: &WgpuBackend, m: usize, k: usize, n: usize) -> Plan {
    if m <= MATVEC_MAX_M {
        // At least two pair steps per thread per row; 64..=256 threads.
        let half = (k / 4).max(1) as u32;
        let wg = (1u32 << (31 - half.leading_zeros())).clamp(64, 256);
        // Fewer rows per workgroup for narrow outputs, so there are still many workgroups.
        let r: u32 = if n >= 4096 { 4 } else if n >= 2048 { 2 } else { 1 };
        let mr = m as u32;
        let r = r.min(MATVEC_MAX_ACC / mr).max(1);
        return Plan::Matvec { wg, r, mr, sg: b.caps.subgroup };
    }
    if m.div_ceil(128) * n.div_ceil(128) >= 256 {
        Plan::Gemm { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8 }
    } else {
        Plan::Gemm { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 }
    }
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::Linear = op else { unreachable!("linear::record got {}", op.name()) };
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
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
    let mut consts = vec![("X_KIND", format!("{}u", kind(i[0].dtype))), ("W_KIND", format!("{}u", kind(i[1].dtype)))];
    let (entry, body, groups) = match plan {
        Plan::Matvec { wg, r, mr, sg } => {
            assert!(r * mr <= MATVEC_MAX_ACC && wg.is_power_of_two());
            consts.extend([("WG", format!("{wg}u")), ("R", format!("{r}u")), ("MR", format!("{mr}u"))]);
            let groups = n.div_ceil(r as usize) * m.div_ceil(mr as usize);
            ("matvec", &bodies()[if sg { 0 } else { 1 }], groups)
        }
        Plan::Gemm { bm, bn, bk, tm, tn } => {
            let wg = (bm / tm) * (bn / tn);
            assert!(matches!(tm, 4 | 8) && matches!(tn, 4 | 8) && bk % 2 == 0);
            assert!((bm * bk / 2) % wg == 0 && (bn * bk / 2) % wg == 0, "gemm tile loads must divide evenly");
            consts.extend([("BM", bm), ("BN", bn), ("BK", bk), ("TM", tm), ("TN", tn), ("WG", wg)].map(|(c, v)| (c, format!("{v}u"))));
            ("gemm", &bodies()[2], m.div_ceil(bm as usize) * n.div_ceil(bn as usize))
        }
    };
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    let key = KernelKey { entry, bindings, variant: plan.variant() };
    let p = Params { offs: [0; 8], m: m as u32, n: n as u32, k: k as u32, pad: 0 };
    b.dispatch(&key, body, &consts, bytemuck::bytes_of(&p), &[i[0], i[1], o[0]], grid(groups as u32))
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

    fn check(b: &WgpuBackend, plan: Plan, (xd, wd, yd): (DType, DType, DType), (m, k, n): (usize, usize, usize), off: usize) {
        let xi = input(xd, &[m, k], Init::Normal { seed: (m * 31 + k * 7 + n) as u64, std: 1.0 });
        let wi = input(wd, &[n, k], Init::Normal { seed: (k * 13 + n) as u64, std: 1.0 / (k as f32).sqrt() });
        let cpu = CpuBackend::new();
        let (cx, cw, cy) = (cpu.alloc(xd, &[m, k]).unwrap(), cpu.alloc(wd, &[n, k]).unwrap(), cpu.alloc(yd, &[m, n]).unwrap());
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
        assert!(r.is_ok(), "{plan:?} {xd}/{wd}/{yd} {m}x{k}x{n} +{off}: {}", r.unwrap_err());
    }

    #[test]
    fn forced_plans_match_cpu() {
        let Some(b) = WgpuBackend::all().into_iter().next() else {
            eprintln!("no wgpu adapter: skipped");
            return;
        };
        use DType::*;
        let dts = [(F32, F32, F32), (F32, BF16, F32), (F16, F16, F16), (BF16, F16, F32), (F16, F32, BF16)];
        let mut plans = vec![];
        for sg in [false, true] {
            if sg && !b.caps.subgroup {
                continue;
            }
            for (wg, r, mr) in [(64, 1, 1), (256, 4, 1), (64, 8, 1), (128, 2, 3)] {
                plans.push((Plan::Matvec { wg, r, mr, sg }, mr as usize));
            }
        }
        plans.push((Plan::Gemm { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8 }, 9));
        plans.push((Plan::Gemm { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 }, 5));
        plans.push((Plan::Gemm { bm: 64, bn: 128, bk: 32, tm: 4, tn: 8 }, 2));
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
