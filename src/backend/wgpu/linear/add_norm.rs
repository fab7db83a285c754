//! add_rms_norm_linear and rms_norm_linear on the matvec: a (residual add +) RMSNorm read inside
//! the projection that follows it (shaders/matvec_norm.wgsl; for a block-quantized W the quantized matvec with
//! shaders/qx_norm.wgsl, quant/), so a one-token step records one dispatch where it
//! recorded two, and the projection does not wait on a one-workgroup norm kernel. The norm is a
//! per-row scale: the matvec sums (a + b) * nw against each weight row and, from the same loads,
//! the row's sum of squares, then scales its outputs. Only for a lone sequence's steps (batch
//! invariance off, at most `MAX_M` rows: decode, below the tensor-core kernel's rows); elsewhere
//! add_rms_norm and the linear apart (the model's choice, by `supports`), so the serving engine's
//! invariant families never take it.
use super::{fits, launch, plan, NormIn, Plan};
use crate::backend::wgpu::{Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// Rows the fused matvec takes at most. Each workgroup loads a, b and nw for its x rows besides
/// its weight rows, so wider steps (and the serving engine's invariant families, which would
/// need it at every M) keep the norm apart: on the H200 the fused kernel under FewRows lost at 8
/// sequences and in prefill chunks.
pub(super) const MAX_M: usize = 4;

/// Where the operands of add_rms_norm_linear (a, b, nw, w -> sum, y) or rms_norm_linear (a, nw,
/// w -> y) are: the input indices of a, nw, w, the output index of y, and of (b, sum) where the op
/// adds.
fn operands(op: &Op) -> (usize, usize, usize, usize, Option<(usize, usize)>) {
    match op {
        Op::AddRmsNormLinear { .. } => (0, 2, 3, 1, Some((1, 0))),
        Op::RmsNormLinear { .. } => (0, 1, 2, 0, None),
        _ => unreachable!("add_norm got {}", op.name()),
    }
}

pub fn supports_add_norm(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (ia, inw, iw, oy, add) = operands(&desc.op);
    let (a, nw, w, y) = (&desc.inputs[ia], &desc.inputs[inw], &desc.inputs[iw], &desc.outputs[oy]);
    let summed = add.map(|(ib, os)| (&desc.inputs[ib], &desc.outputs[os]));
    let f32s =
        a.dtype == DType::F32 && summed.is_none_or(|(bb, sum)| bb.dtype == DType::F32 && sum.dtype == DType::F32);
    if !f32s || nw.dtype.is_quant() {
        return Support::No(match summed {
            Some((bb, sum)) => format!(
                "the fused matvec reads f32 a and b into an f32 sum, a float norm weight (got a {}, b {}, sum {}, nw {})",
                a.dtype, bb.dtype, sum.dtype, nw.dtype
            ),
            None => format!(
                "the fused matvec reads f32 rows and a float norm weight (got x {}, nw {})",
                a.dtype, nw.dtype
            ),
        });
    }
    let (m, k) = (a.shape[0], w.shape[1]);
    let (op, norm) = match summed {
        Some(_) => ("add_rms_norm_linear", "add_rms_norm"),
        None => ("rms_norm_linear", "rms_norm"),
    };
    if b.invariance() != BatchInvariance::Off || m > MAX_M {
        return Support::No(format!(
            "{m} rows under {:?}: the fused matvec is for a lone sequence's steps of at most {MAX_M} rows \
             (batch invariance off); {norm}, then the linear",
            b.invariance()
        ));
    }
    if k % 2 != 0 {
        return Support::No(format!("K {k} is odd: the fused matvec reads whole pairs"));
    }
    let n = w.shape[0];
    let swiglu = matches!(
        desc.op,
        Op::AddRmsNormLinear { swiglu: true, .. } | Op::RmsNormLinear { swiglu: true, .. }
    );
    if w.dtype.is_quant() {
        if let Support::No(why) = crate::backend::wgpu::quant::supports_add_norm(b, (op, norm), w, swiglu) {
            return Support::No(why);
        }
    } else if swiglu && !matches!(norm_plan(b, (m, k, n), true), Plan::Matvec { r, .. } if r % 2 == 0) {
        return Support::No(format!(
            "the swiglu epilogue takes a (gate, up) pair in one workgroup: the matvec plan for {m} x {k} x {n} \
             has an odd number of weight rows a workgroup"
        ));
    }
    // the linear's own limits, on the normed rows it reads (a, b and sum have their shape) and
    // the projection's own outputs (N of them, before the swiglu halves them)
    let h = TensorDesc::new(DType::F32, &a.shape);
    let y = TensorDesc::new(y.dtype, &[m, n]);
    super::supports(b, &OpDesc::new(Op::Linear, vec![h, w.clone()], vec![y]))
}

/// add_rms_norm_linear (inputs a, b, nw, w; outputs sum, y) or rms_norm_linear (inputs a, nw, w;
/// output y). Other workgroups read a and b while the first weight rows' workgroup stores the
/// sum, so the sum may not share memory with them.
pub(super) fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (Op::AddRmsNormLinear {
        eps,
        unit_offset,
        swiglu,
    }
    | Op::RmsNormLinear {
        eps,
        unit_offset,
        swiglu,
    }) = *op
    else {
        unreachable!()
    };
    // (`Backend::run` has checked `supports_add_norm`)
    let (ia, inw, iw, oy, add) = operands(op);
    let (a, nw, w, y) = (i[ia], i[inw], i[iw], o[oy]);
    let summed = add.map(|(ib, os)| (i[ib], o[os]));
    let (m, k, n) = (a.shape[0], w.shape[1], w.shape[0]);
    if let Some((bb, sum)) = summed {
        for t in [a, bb] {
            if overlaps(b, t, sum)? {
                return Err(Error::Other(
                    "add_rms_norm_linear: the sum shares memory with an input (other workgroups still read it)".into(),
                ));
            }
        }
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if w.dtype.is_quant() {
        return crate::backend::wgpu::quant::record_add_norm(b, (eps, unit_offset, swiglu), a, nw, w, y, summed);
    }
    let nm = NormIn {
        eps,
        unit_offset,
        swiglu_out: swiglu,
        nw,
        add: summed,
    };
    launch(b, norm_plan(b, (m, k, n), swiglu), &[a, w], &[y], false, Some(nm), None)
}

/// The matvec plan of the fused op: the linear's, with an even number of weight rows a workgroup
/// for the swiglu epilogue (its (gate, up) pairs in one workgroup); a one-token step's in the
/// workgroup shape tuned for it (`MatvecShape::swiglu_norm`, measured at M = 1) where that fits.
/// The fused op is a lone decode step's alone (no batch invariance to keep), so its WG may
/// differ from the plain linear's.
fn norm_plan(b: &WgpuBackend, (m, k, n): (usize, usize, usize), swiglu: bool) -> Plan {
    let base = plan(b, m, k, n, false);
    let tuned = match base {
        Plan::Matvec { mr, u, sg, .. } if swiglu && m == 1 => b
            .tuning
            .float_matvec
            .swiglu_norm(k, n)
            .map(|(wg, r)| Plan::Matvec { wg, r, mr, u, sg })
            .filter(|&p| fits(b, p)),
        _ => None,
    };
    match tuned.unwrap_or(base) {
        Plan::Matvec { wg, r, mr, u, sg } if swiglu && r % 2 == 1 => Plan::Matvec {
            wg,
            r: r + 1,
            mr,
            u,
            sg,
        },
        p => p,
    }
}

/// Whether two tensors share bytes of one buffer.
fn overlaps(b: &WgpuBackend, x: &Tensor, y: &Tensor) -> Result<bool> {
    if b.storage(x)?.id != b.storage(y)?.id {
        return Ok(false);
    }
    let range = |t: &Tensor| (t.byte_offset(), t.byte_offset() + t.nbytes());
    let ((x0, x1), (y0, y1)) = (range(x), range(y));
    Ok(x0 < y1 && y0 < x1)
}
