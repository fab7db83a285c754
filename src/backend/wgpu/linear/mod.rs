//! linear: y[M, N] = x[M, K] · W[N, K]ᵀ for every float dtype of x, w and y (f32 accumulation).
//!
//! One kernel, prefixed with shaders/linear.wgsl (Params and the pair loaders), its inner loop
//! unrolled into straight-line code by `matvec_body`:
//! * `matvec` (shaders/matvec.wgsl), every M (see `plan`: rows independent of M): memory-bound on W. A
//!   workgroup of WG threads owns R weight rows and MR x rows; its threads stride over K together
//!   a pair of elements (one word of a 16-bit W) per row and step, U steps a trip, and reduce with
//!   subgroup shuffles (`sg` variant, where the adapter has subgroups) or a workgroup-memory tree.
//!
//! `plan` picks the kernel and its shape; `linear::sweep` (an ignored test) times the candidates.
//! Any element offsets and any M, N, K are handled (16-bit rows of odd K start mid-word).
mod body;
#[cfg(test)]
mod sweep;
#[cfg(test)]
mod tests;

use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use body::{body, Plan};
use bytemuck::{Pod, Zeroable};

/// Accumulators per thread in matvec (R * MR) at most: registers, not workgroup memory, bound it.
const MATVEC_MAX_ACC: u32 = 128;

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

/// The kernel for an M x K x N problem on `b`: the matvec for every M. A row of y is then the same
/// bits whatever M is (the kernel's per-row order of sums does not depend on how many x rows a
/// workgroup holds): the serving engine packs the tokens of many sequences into one linear, and a
/// sequence's result must not depend on its neighbours or on how its prompt was chunked. (A tiled
/// GEMM summing in another order served M > 64 before; a tiled prefill kernel must keep this
/// order.)
fn plan(b: &WgpuBackend, m: usize, _k: usize, _n: usize, wd: DType) -> Plan {
    // cooperative matrices where the adapter has them, for 16-bit weights (whose f16 conversion
    // adds little; f32 weights keep the matvec's f32 products), for every M
    if b.caps.cooperative_matrix && wd.size() == 2 {
        return coop_plan(m);
    }
    // the tuned workgroup (tuning.rs `float_matvec`); from `wide_from` x rows on, more weight
    // rows and x rows a workgroup (each weight pair loaded serves more rows)
    let t = b.tuning.float_matvec;
    let (r, mr) = if m >= t.wide_from {
        (t.wide_r, (m as u32).min(t.wide_mr))
    } else {
        (t.r, (m as u32).min(4))
    };
    let p = Plan::Matvec {
        wg: t.wg,
        r,
        mr,
        u: t.u,
        sg: b.caps.subgroup,
    };
    if fits(b, p) {
        p
    } else {
        Plan::Matvec {
            wg: t.wg,
            r: t.r,
            mr: (m as u32).min(4),
            u: t.u,
            sg: b.caps.subgroup,
        }
    }
}

/// The cooperative-matrix tiles for M rows: one 16-row tile and one 16-column tile a workgroup
/// while M is small (more workgroups over N), 2 x 2 tiles from 32 rows on. The K split (4
/// subgroups over chunks of 32) is the same for every M: it fixes each output's order of sums.
fn coop_plan(m: usize) -> Plan {
    let t = if m <= 16 { 1 } else { 2 };
    Plan::Coop {
        tm: t,
        tn: t,
        ns: 4,
        sg: 32,
        bk: 32,
    }
}

/// Partials a sum keeps in workgroup memory: one a thread, or one a subgroup in the `sg` variant.
fn stride(b: &WgpuBackend, wg: u32, sg: bool) -> u32 {
    if sg && b.caps.subgroup_min > 0 {
        wg.div_ceil(b.caps.subgroup_min)
    } else {
        wg
    }
}

/// Whether `plan`'s accumulators and workgroup memory fit the adapter.
fn fits(b: &WgpuBackend, plan: Plan) -> bool {
    match plan {
        Plan::Matvec { wg, r, mr, sg, .. } => {
            r * mr <= MATVEC_MAX_ACC && (r * mr * stride(b, wg, sg) * 4) as u64 <= b.caps.max_workgroup_storage as u64
        }
        Plan::Coop { tm, tn, ns, bk, .. } => {
            let bytes = ns * ((tm + tn) * 16 * bk * 2 + tm * tn * 256 * 4);
            b.caps.cooperative_matrix && bytes <= b.caps.max_workgroup_storage
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
    launch(b, plan(b, m, k, n, i[1].dtype), i, o)
}

/// The kernel key, body and constants of `plan` for x, w, y of `dts`.
fn spec(
    b: &WgpuBackend,
    plan: Plan,
    dts: [DType; 3],
    aligned: bool,
) -> (KernelKey, &'static str, Vec<(&'static str, String)>) {
    let bindings = vec![read("x", dts[0]), read("w", dts[1]), write("y", dts[2])];
    let mut consts = vec![
        ("X_KIND", format!("{}u", kind(dts[0]))),
        ("W_KIND", format!("{}u", kind(dts[1]))),
        ("ALIGNED", aligned.to_string()),
    ];
    let entry = match plan {
        Plan::Matvec { wg, r, mr, u, sg } => {
            assert!(wg.is_power_of_two() && u >= 1);
            let s = stride(b, wg, sg);
            consts
                .extend([("WG", wg), ("R", r), ("MR", mr), ("U", u), ("STRIDE", s)].map(|(c, v)| (c, format!("{v}u"))));
            "matvec"
        }
        Plan::Coop { tm, tn, ns, sg, bk } => {
            consts.extend(
                [("TM", tm), ("TN", tn), ("NS", ns), ("SG", sg), ("BK", bk)].map(|(c, v)| (c, format!("{v}u"))),
            );
            "linear_coop"
        }
    };
    let key = KernelKey {
        entry,
        bindings,
        variant: format!("{}{}", plan.variant(), if aligned { "a" } else { "" }),
    };
    (key, body(b, plan), consts)
}

fn launch(b: &WgpuBackend, plan: Plan, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    for t in [i[0], i[1], o[0]] {
        if t.offset + t.numel() + 1 > u32::MAX as usize {
            return Err(Error::Other(format!("linear: {t:?} reaches past u32 element indices")));
        }
    }
    // Every pair load starts on a word: no 16-bit operand has an odd row start.
    let aligned = [i[0], i[1]]
        .iter()
        .all(|t| t.dtype.size() == 4 || (t.offset % 2 == 0 && k % 2 == 0));
    assert!(fits(b, plan), "linear: plan {} does not fit {}", plan.variant(), b.name);
    let groups = match plan {
        Plan::Matvec { r, mr, .. } => n.div_ceil(r as usize) * m.div_ceil(mr as usize),
        Plan::Coop { tm, tn, .. } => n.div_ceil(16 * tn as usize) * m.div_ceil(16 * tm as usize),
    };
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    let (key, body, consts) = spec(b, plan, [i[0].dtype, i[1].dtype, o[0].dtype], aligned);
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
