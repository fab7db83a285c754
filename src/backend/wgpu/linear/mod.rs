//! linear: y[M, N] = x[M, K] · W[N, K]ᵀ for every float dtype of x, w and y (f32 accumulation).
//!
//! Two kernels, prefixed with shaders/linear.wgsl (Params and the pair loaders), their inner loops
//! unrolled into straight-line code (body.rs, coop.rs):
//! * `matvec` (shaders/matvec.wgsl), memory-bound on W: every M below `COOP_FROM`, and every M
//!   under `BatchInvariance::FewRows` (its rows do not depend on M). A workgroup of WG threads
//!   owns R weight rows and MR x rows; its threads stride over K together a pair of elements (one
//!   word of a 16-bit W) per row and step, U steps a trip, and reduce with subgroup shuffles (`sg`
//!   variant, where the adapter has subgroups) or a workgroup-memory tree.
//!
//! * `linear_coop` (shaders/linear_coop.wgsl, coop.rs): tensor-core tiles (cooperative matrices,
//!   where the adapter has them) for 16-bit W and f32 x and y, x split into f16 hi + lo. Its rows
//!   do not depend on M either, but its order of sums is not the matvec's: with batch invariance
//!   off it takes M from `COOP_FROM` (`COOP_GEMM_WIDE` where its tiles fill the GPU, else
//!   `COOP_GEMM`, K split across workgroups where even its tiles are too few: `gemm_shape`), so a
//!   row's bits change with M there;
//!   under `BatchInvariance::ManyRows` it takes every M (`coop::many_rows`: one K split for every
//!   M of a weight matrix, so one order of sums). The serving engine turns one of the two
//!   invariant modes on (`Backend::set_batch_invariant`).
//!
//! `plan` picks the kernel and its shape; `linear::sweep` (an ignored test) times the candidates.
//! Any element offsets and any M, N, K are handled (16-bit rows of odd K start mid-word).
mod add_norm;
mod body;
mod coop;
mod coop_quant;
mod norm_after;
mod residual;
mod rope_kv_after;
#[cfg(test)]
mod sweep;
#[cfg(test)]
mod tests;

use super::kernel::{grid, read, write, KernelKey};
use super::shaders::fill;
use super::{Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
pub use add_norm::supports_add_norm;
use body::{body, Plan, Tail};
use bytemuck::{Pod, Zeroable};
pub use coop_quant::{quant_coop_plan, record_quant_coop};
pub use norm_after::{record_norm_after, supports_norm_after};
pub use residual::supports_linear_add;
pub use rope_kv_after::{record_rope_kv_after, supports_rope_kv_after};

/// From this many x rows on, where batch invariance is off and the adapter has cooperative matrices,
/// a 16-bit-weight linear is the cooperative-matrix GEMM (coop.rs): x split into f16 hi + lo, f32
/// sums, 5-8x the matvec's FLOP/s from M = 256 on the H200 and 2-7x at M = 64. Its order of sums
/// differs from the matvec's, so a row's bits then depend on M (batch invariance keeps it off).
const COOP_FROM: usize = 64;

/// The GEMM's shape: 128 weight rows x 64 tokens a workgroup, 8 subgroups of 2x4 tiles, K in steps
/// of 64 (the fastest on the H200 from M = 256 of every model shape timed, 1.1-1.25x the 64 x 64
/// tile in steps of 32; every K-split-1 shape gives the same bits).
const COOP_GEMM: coop::Coop = coop::Coop::new(4, 2, 2, 4, 1, 64);

/// The GEMM's wide shape for a 16-bit W: twice COOP_GEMM's tokens a workgroup (128 x 128, 16
/// subgroups, K in steps of 32): fewer W and x re-reads a FLOP, so less time than COOP_GEMM where
/// its workgroups fill the GPU, but half of them or fewer leave the GPU idle (twice COOP_GEMM's
/// time at M = 256, N = 3072): taken from `WIDE_FROM` of its workgroups on (docs/BENCHMARKS.md
/// r43). x's hi and lo rows go into one accumulator (`hi_lo_blocks`): 2x2 accumulators a subgroup
/// for its 32 tokens instead of 4x2, the registers a 512-thread workgroup must fit, for the same
/// fragment loads and products. Another order of sums than COOP_GEMM's (batch invariance is off
/// wherever it runs). Its loads run two steps ahead (`two_ahead`): the staging, not the products,
/// bounds this tile, and a step's products alone are too short to hide its loads' latency.
const COOP_GEMM_WIDE: coop::Coop = coop::Coop::new(4, 2, 4, 2, 1, 32).hi_lo_blocks().two_ahead();

/// COOP_GEMM_WIDE's workgroups (tiles of M x N) from which a linear takes it; below as many of
/// COOP_GEMM's, K splits across workgroups (`gemm_shape`).
const WIDE_FROM: usize = 128;

/// K a workgroup at least where COOP_GEMM splits K to fill the GPU: two of its K steps, so that a
/// split's loads of its second step still run under its first step's products (not swept).
const GEMM_MIN_KC: usize = 128;

/// Whether a linear of `m` x rows takes a cooperative-matrix kernel: operand dtypes it takes
/// (`coop_dtypes`), an adapter that runs the mode's coop shapes (`fits`), and then M from
/// `COOP_FROM` with batch invariance off, every M under `ManyRows`, never under `FewRows`.
fn takes_coop(m: usize, gemm_dtypes: bool, mode: BatchInvariance, fits: bool) -> bool {
    gemm_dtypes
        && fits
        && match mode {
            BatchInvariance::Off => m >= COOP_FROM,
            BatchInvariance::FewRows => false,
            BatchInvariance::ManyRows => true,
        }
}

/// The coop shape a linear of `m` x rows takes on `b`, if any (`takes_coop`).
fn coop_plan(b: &WgpuBackend, (m, k, n): (usize, usize, usize), gemm_dtypes: bool) -> Option<coop::Coop> {
    let mode = b.invariance();
    let fits = b.caps.cooperative_matrix
        && match mode {
            BatchInvariance::ManyRows => coop::many_rows_fit(b),
            _ => coop::fits(b, coop::on(b, COOP_GEMM)),
        };
    if !takes_coop(m, gemm_dtypes, mode, fits) {
        return None;
    }
    Some(
        match mode {
            BatchInvariance::ManyRows => coop::many_rows(m, n),
            _ => gemm_shape(b, m, k, n),
        }
        .on(b.caps.coop_tile, b.caps.subgroup_min),
    )
}

/// COOP_GEMM_WIDE where its workgroups fill the GPU (`WIDE_FROM`) and it fits the adapter, else
/// COOP_GEMM, with K split across workgroups (runs of `GEMM_MIN_KC` or more, a power-of-two count)
/// until they make `WIDE_FROM`: a short prompt's projections with few weight rows (N 1024 at M
/// 256: 32 tiles) would leave most of the GPU idle. The split's partials are added in order
/// (linear_splitk.wgsl); a row's bits already change with M here (batch invariance off).
fn gemm_shape(b: &WgpuBackend, m: usize, k: usize, n: usize) -> coop::Coop {
    let wide = coop::on(b, COOP_GEMM_WIDE);
    let tiles = m.div_ceil(wide.tok() as usize) * n.div_ceil(wide.bn() as usize);
    if tiles >= WIDE_FROM && coop::fits(b, wide) {
        return COOP_GEMM_WIDE;
    }
    let c = coop::on(b, COOP_GEMM);
    let tiles = m.div_ceil(c.tok() as usize) * n.div_ceil(c.bn() as usize);
    let mut splits = 1;
    while tiles * splits < WIDE_FROM && k.div_ceil(2 * splits) >= GEMM_MIN_KC {
        splits *= 2;
    }
    match splits {
        1 => COOP_GEMM,
        _ => COOP_GEMM.split(k.div_ceil(splits).next_multiple_of(COOP_GEMM.bk as usize) as u32),
    }
}

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

impl Params {
    /// (M, N, K), offsets filled in at dispatch
    fn new(m: usize, n: usize, k: usize) -> Self {
        Params {
            offs: [0; 8],
            m: m as u32,
            n: n as u32,
            k: k as u32,
            pad: 0,
        }
    }
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

/// swiglu_linear: the matvec with x read as swiglu of (gate, up) f32 pairs (X_KIND 3), for float
/// weights.
pub fn supports_swiglu(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (x, w) = (&desc.inputs[0], &desc.inputs[1]);
    if x.dtype != DType::F32 || w.dtype.is_quant() {
        return Support::No(format!(
            "the fused kernel reads f32 (gate, up) pairs and float weights, got x {} and w {}",
            x.dtype, w.dtype
        ));
    }
    // where the plain linear would take a cooperative-matrix kernel, swiglu apart and then that
    if coop_plan(
        b,
        (x.shape[0], w.shape[1], w.shape[0]),
        coop_dtypes(x.dtype, w.dtype, desc.outputs[0].dtype),
    )
    .is_some()
    {
        return Support::No(format!(
            "{} rows on cooperative matrices ({:?}): swiglu, then the tensor-core linear",
            x.shape[0],
            b.invariance()
        ));
    }
    supports(b, desc)
}

/// linear_swiglu: the tensor-core linear with the swiglu of each (gate, up) pair of outputs in its
/// epilogue, wherever the plain linear of these operands takes a cooperative-matrix kernel (so a
/// batch-invariant engine takes it at every M or never); the float matvec leaves the swiglu to
/// `swiglu_linear`. A quantized W wherever the qmatvec takes its rows (quant::record_linear_swiglu:
/// its epilogue where it holds whole pairs, a choice of the weight and lanes alone, never of M).
pub fn supports_linear_swiglu(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (x, w, y) = (&desc.inputs[0], &desc.inputs[1], &desc.outputs[0]);
    if w.dtype.is_quant() {
        // the rows the qmatvec takes: its epilogue, or the linear and swiglu
        // (quant::record_linear_swiglu); a prefill on the tensor cores stays linear, then swiglu,
        // through the model's own (gate, up) buffer
        if coop_quant::quant_coop_for(b, x.shape[0], [x.dtype, w.dtype, y.dtype]).is_some() {
            return Support::No(format!(
                "{} rows of a quantized W take the tensor-core GEMM, which has no swiglu epilogue: \
                 linear, then swiglu",
                x.shape[0]
            ));
        }
        return supports(b, desc);
    }
    if !coop_dtypes(x.dtype, w.dtype, y.dtype) {
        return Support::No(format!(
            "the fused epilogue is the tensor-core linear's: f32 x and y, 16-bit W (got x {}, w {}, y {})",
            x.dtype, w.dtype, y.dtype
        ));
    }
    if coop_plan(b, (x.shape[0], w.shape[1], w.shape[0]), true).is_none() {
        return Support::No(format!(
            "{} rows take the matvec here ({:?}, cooperative matrices {}): linear, then swiglu into the \
             down projection",
            x.shape[0],
            b.invariance(),
            b.caps.cooperative_matrix
        ));
    }
    supports(b, desc)
}

/// The kernel for an M x K x N problem on `b`: a cooperative-matrix shape where `coop_plan` gives
/// one, else the matvec (whose rows are the same bits whatever M is: its per-row order of sums
/// does not depend on how many x rows a workgroup holds).
fn plan(b: &WgpuBackend, m: usize, k: usize, n: usize, gemm_dtypes: bool) -> Plan {
    if let Some(c) = coop_plan(b, (m, k, n), gemm_dtypes) {
        return Plan::Coop(c);
    }
    // the tuned workgroup for this weight matrix (tuning.rs `float_matvec`: its size by K and N,
    // the same for every M); from `wide_from` x rows on, more weight rows and x rows a workgroup
    // (each weight pair loaded serves more rows)
    let t = b.tuning.float_matvec;
    let (wg, r1) = t.workgroup(k, n);
    let (r, mr) = if m >= t.wide_from {
        (t.wide_r, (m as u32).min(t.wide_mr))
    } else {
        (r1, (m as u32).min(4))
    };
    let p = Plan::Matvec {
        wg,
        r,
        mr,
        u: t.u,
        sg: b.caps.subgroup,
    };
    if fits(b, p) {
        p
    } else {
        Plan::Matvec {
            wg,
            r: r1,
            mr: (m as u32).min(4),
            u: t.u,
            sg: b.caps.subgroup,
        }
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
        Plan::Coop(c) => coop::fits(b, c),
    }
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let swiglu = match op {
        Op::Linear => false,
        Op::SwiGluLinear => true,
        Op::AddRmsNormLinear { .. } | Op::RmsNormLinear { .. } => return add_norm::record(b, op, i, o),
        Op::LinearAdd => return residual::record(b, i, o),
        Op::LinearSwiGlu if i[1].dtype.is_quant() => return super::quant::record_linear_swiglu(b, i, o),
        Op::LinearSwiGlu => {
            let (m, k, n) = (i[0].shape[0], i[1].shape[1], i[1].shape[0]);
            return match coop_plan(b, (m, k, n), coop_dtypes(i[0].dtype, i[1].dtype, o[0].dtype)) {
                Some(c) if m > 0 && n > 0 => launch_coop(b, c, i, o, true),
                Some(_) => Ok(()),
                None => Err(Error::Other(format!(
                    "linear_swiglu: {m} x {k} x {n} takes no cooperative-matrix kernel on {}",
                    b.name
                ))),
            };
        }
        _ => unreachable!("linear::record got {}", op.name()),
    };
    let (m, k, n) = (i[0].shape[0], i[1].shape[1], i[1].shape[0]);
    if i[1].dtype.is_quant() {
        return super::quant::record_linear(b, i, o);
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let gemm_dtypes = !swiglu && coop_dtypes(i[0].dtype, i[1].dtype, o[0].dtype);
    launch(b, plan(b, m, k, n, gemm_dtypes), i, o, swiglu, None, None)
}

/// The operand dtypes the cooperative-matrix GEMM takes: f32 x and y, 16-bit weights.
fn coop_dtypes(x: DType, w: DType, y: DType) -> bool {
    x == DType::F32 && y == DType::F32 && matches!(w, DType::F16 | DType::BF16)
}

/// add_rms_norm_linear's and rms_norm_linear's extra operands (add_norm.rs): the matvec reads x
/// as rms_norm(x + b, nw) and stores x + b into `sum` (`add`: b, sum), or as rms_norm(x, nw)
/// (matvec_norm.wgsl).
struct NormIn<'a> {
    eps: f32,
    unit_offset: bool,
    /// y is the swiglu of each (gate, up) pair of outputs (the add_rms_norm_linear_swiglu op)
    swiglu_out: bool,
    nw: &'a Tensor,
    add: Option<(&'a Tensor, &'a Tensor)>,
}

/// One linear; with `swiglu`, x is [M, 2K] (gate, up) pairs read through swiglu (X_KIND 3); with
/// `norm`, x is the rows of a (residual add +) RMSNorm (add_rms_norm_linear, rms_norm_linear);
/// with `radd`, each output adds the residual at its index (linear_add); those two on the matvec
/// only.
fn launch(
    b: &WgpuBackend,
    plan: Plan,
    i: &[&Tensor],
    o: &[&Tensor],
    swiglu: bool,
    norm: Option<NormIn>,
    radd: Option<&Tensor>,
) -> Result<()> {
    let (m, k, n) = (i[0].shape[0], i[1].shape[1], i[1].shape[0]);
    let mut extra: Vec<&Tensor> = radd.into_iter().collect();
    if let Some(nm) = &norm {
        extra.push(nm.nw);
        extra.extend(nm.add.iter().flat_map(|&(b, sum)| [b, sum]));
    }
    for t in [i[0], i[1], o[0]].into_iter().chain(extra) {
        if t.offset + t.numel() + 1 > u32::MAX as usize {
            return Err(Error::Other(format!("linear: {t:?} reaches past u32 element indices")));
        }
    }
    if let Plan::Coop(c) = plan {
        debug_assert!(
            !swiglu && norm.is_none() && radd.is_none(),
            "swiglu_linear, the norm's and the residual's linears stay on the matvec"
        );
        return launch_coop(b, c, i, o, false);
    }
    let mut bindings = vec![read("x", i[0].dtype), read("w", i[1].dtype), write("y", o[0].dtype)];
    // Every pair load starts on a word: no 16-bit operand has an odd row start.
    let aligned = [i[0], i[1]]
        .iter()
        .all(|t| t.dtype.size() == 4 || (t.offset % 2 == 0 && k % 2 == 0));
    let mut p = Params::new(m, n, k);
    let mut tensors = vec![i[0], i[1], o[0]];
    if let Some(r) = radd {
        bindings.push(read("r", r.dtype));
        tensors.push(r);
    }
    if let Some(nm) = &norm {
        match nm.add {
            Some((bb, sum)) => {
                bindings.extend([read("b", bb.dtype), read("nw", nm.nw.dtype), write("sum", sum.dtype)]);
                tensors.extend([bb, nm.nw, sum]);
            }
            None => {
                bindings.push(read("nw", nm.nw.dtype));
                tensors.push(nm.nw);
            }
        }
        p.pad = nm.eps.to_bits();
    }
    let Plan::Matvec { wg, r, mr, u, sg } = plan else {
        unreachable!()
    };
    assert!(fits(b, plan) && wg.is_power_of_two() && u >= 1);
    assert!(
        radd.is_none() || (r + 1) / 2 * mr <= wg,
        "linear_add: one output pair a thread"
    );
    let groups = n.div_ceil(r as usize) * m.div_ceil(mr as usize);
    let (x_kind, w_kind) = (if swiglu { 3 } else { kind(i[0].dtype) }, kind(i[1].dtype));
    let unit_offset = norm.as_ref().map(|nm| nm.unit_offset);
    let swiglu_out = norm.as_ref().is_some_and(|nm| nm.swiglu_out);
    assert!(
        !swiglu_out || (r % 2 == 0 && n % 2 == 0),
        "linear: swiglu pairs need R and N even"
    );
    let source = || {
        let mut consts = vec![
            ("X_KIND", format!("{x_kind}u")),
            ("W_KIND", format!("{w_kind}u")),
            ("ALIGNED", aligned.to_string()),
            ("SWIGLU_OUT", swiglu_out.to_string()),
        ];
        if let Some(unit) = unit_offset {
            consts.push(("NW_OFFSET", unit.to_string()));
        }
        let s = stride(b, wg, sg);
        let ns = if unit_offset.is_some() { mr } else { 0 };
        consts.extend(
            [("WG", wg), ("R", r), ("MR", mr), ("U", u), ("STRIDE", s), ("NS", ns)].map(|(c, v)| (c, format!("{v}u"))),
        );
        let tail = Tail {
            norm: norm.as_ref().map(|nm| nm.add.is_some()),
            radd: radd.is_some(),
        };
        (body(b, plan, aligned, false, tail).to_string(), consts)
    };
    let key = KernelKey {
        entry: "matvec",
        bindings,
        variant: format!(
            "{}{}{}{}{}{}",
            plan.variant(),
            if aligned { "a" } else { "" },
            if swiglu { "sw" } else { "" },
            if swiglu_out { "so" } else { "" },
            match unit_offset {
                Some(true) => "n1",
                Some(false) => "n",
                None => "",
            },
            match (&norm, radd) {
                (Some(NormIn { add: None, .. }), _) => "x",
                (_, Some(_)) => "r",
                _ => "",
            }
        ),
    };
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    b.dispatch(&key, source, bytemuck::bytes_of(&p), &tensors, grid(groups as u32))
}

/// One linear dispatch of either kernel: Params from (M, K, N), bindings x, w, y.
#[allow(clippy::too_many_arguments)]
fn dispatch(
    b: &WgpuBackend,
    key: &KernelKey,
    body: &str,
    consts: &[(&str, String)],
    (m, k, n): (usize, usize, usize),
    i: &[&Tensor],
    o: &[&Tensor],
    groups: usize,
) -> Result<()> {
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    let p = Params::new(m, n, k);
    b.dispatch(
        key,
        || (body.to_string(), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &[i[0], i[1], o[0]],
        grid(groups as u32),
    )
}

/// `launch` of a coop plan: f32 x and y, f16 or bf16 W, an adapter with cooperative matrices;
/// with `swiglu`, y is the swiglu of each (gate, up) pair of outputs (`Op::LinearSwiGlu`).
fn launch_coop(b: &WgpuBackend, c: coop::Coop, i: &[&Tensor], o: &[&Tensor], swiglu: bool) -> Result<()> {
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    let (xd, wd, yd) = (i[0].dtype, i[1].dtype, o[0].dtype);
    if xd != DType::F32 || yd != DType::F32 || !matches!(wd, DType::F16 | DType::BF16) || !coop::fits(b, c) {
        return Err(Error::Other(format!(
            "linear: {} is for f32 x and y, 16-bit W on an adapter with cooperative matrices \
             (got {xd}, {wd} -> {yd} on {})",
            c.variant(),
            b.name
        )));
    }
    let splits = c.splits(k);
    if splits == 1 {
        // one split: the kernel's own output is the sum (the same bits as a second pass of one term)
        return coop_pass(b, c.split(0), i, o[0], swiglu);
    }
    // rows a run: as many as the [splits, rows, N] partials fit in one binding
    let run = split_run(b, splits, n).min(m);
    let part = b.scratch("linear-splitk", DType::F32, splits * run * n)?;
    let yn = if swiglu { n / 2 } else { n };
    for r0 in (0..m).step_by(run) {
        let rows = run.min(m - r0);
        let x = i[0].view(r0 * k, &[rows, k])?;
        let y = o[0].view(r0 * yn, &[rows, yn])?;
        let sk = part.view(0, &[splits * rows * n])?;
        coop_pass(b, c, &[&x, i[1]], &sk, false)?;
        splitk_sum(b, &sk, &y, (rows, n, splits), swiglu)?;
    }
    Ok(())
}

/// Rows of one split-K run: as many as `splits` x rows x `n` f32 partials fit in one binding.
fn split_run(b: &WgpuBackend, splits: usize, n: usize) -> usize {
    (b.caps.max_binding as usize / 4 / (splits * n)).max(1)
}

/// The split-K plan of a fused op's projection (M, K, N) and its splits, where the partials of
/// every row fit one binding (the op's second kernel adds them); None where it is not split.
fn split(b: &WgpuBackend, (m, k, n): (usize, usize, usize), dtypes: bool) -> Option<(coop::Coop, usize)> {
    let c = coop_plan(b, (m, k, n), dtypes)?;
    let splits = c.splits(k);
    (splits > 1 && m > 0 && n > 0 && split_run(b, splits, n) >= m).then_some((c, splits))
}

/// The coop kernel `c` over x = i[0], W = i[1] into `y`: the outputs (K unsplit, with the swiglu
/// epilogue where `swiglu`), or for a split plan its [splits, M, N] partials.
fn coop_pass(b: &WgpuBackend, c: coop::Coop, i: &[&Tensor], y: &Tensor, swiglu: bool) -> Result<()> {
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    let aligned = coop::aligned(k, i[0].offset, i[1].offset);
    let tiles = n.div_ceil(c.bn() as usize) * m.div_ceil(c.tok() as usize);
    let (key, consts) = coop::spec(c, i[1].dtype, aligned, swiglu);
    let body = body(b, Plan::Coop(c), aligned, swiglu, Tail::default());
    dispatch(b, &key, body, &consts, (m, k, n), i, &[y], tiles * c.splits(k))
}

/// linear_splitk.wgsl: y = the `s` partials of each of the M x N outputs (`partials`, [s, M, N])
/// added in split order; with `swiglu`, of each (gate, up) pair, y being M x N / 2.
fn splitk_sum(
    b: &WgpuBackend,
    partials: &Tensor,
    y: &Tensor,
    (m, n, s): (usize, usize, usize),
    swiglu: bool,
) -> Result<()> {
    const WG: usize = 128;
    let key = KernelKey {
        entry: "linear_splitk",
        bindings: vec![read("x", DType::F32), write("y", DType::F32)],
        variant: format!("s{s}{}", if swiglu { "swiglu" } else { "" }),
    };
    // Params.k carries the number of partials (linear_splitk.wgsl's `s`)
    let p = Params::new(m, n, s);
    let outs = if swiglu { m * (n / 2) } else { m * n };
    b.dispatch(
        &key,
        || {
            let consts = vec![("WG", format!("{WG}u")), ("SWIGLU", swiglu.to_string())];
            (fill(b.source("linear_splitk.wgsl"), &[("sum", split_sum(s))]), consts)
        },
        bytemuck::bytes_of(&p),
        &[partials, y],
        grid(outs.div_ceil(WG) as u32),
    )
}

/// The body of a function of `i` that returns the sum of `splits` partials `partial(s, i)` in
/// split order: every load first, then the adds (a left fold, a loop's bits).
pub(super) fn split_sum(splits: usize) -> String {
    let mut c: String = (0..splits).map(|s| format!("let x{s} = partial({s}u, i);\n")).collect();
    c += "var v = x0;\n";
    c += &(1..splits).map(|s| format!("v += x{s};\n")).collect::<String>();
    c + "return v;\n"
}
