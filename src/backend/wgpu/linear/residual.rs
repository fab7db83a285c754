//! linear_add on the matvec: a projection with the residual added in its epilogue (matvec.wgsl's
//! and qmatvec.wgsl's `radd` lines, the residual loaded with the first loads), so the projection
//! after the next norm reads one row where `add_rms_norm_linear` reads two (a and b), and stores
//! no sum. Only for a lone sequence's steps, as add_rms_norm_linear (batch invariance off, at
//! most `MAX_M` rows, the matvec); elsewhere the device refuses it by name and the model records
//! the linear with the add + norm after it.
use super::add_norm::MAX_M;
use super::{coop_dtypes, launch, plan, Plan};
use crate::backend::wgpu::{Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

pub fn supports_linear_add(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (x, w, r, y) = (&desc.inputs[0], &desc.inputs[1], &desc.inputs[2], &desc.outputs[0]);
    if r.dtype != DType::F32 || y.dtype != DType::F32 {
        return Support::No(format!(
            "the fused matvec adds an f32 residual into an f32 output (got r {}, y {})",
            r.dtype, y.dtype
        ));
    }
    let (m, k, n) = (x.shape[0], w.shape[1], w.shape[0]);
    if b.invariance() != BatchInvariance::Off || m > MAX_M {
        return Support::No(format!(
            "{m} rows under {:?}: the fused matvec is for a lone sequence's steps of at most {MAX_M} rows \
             (batch invariance off); linear, then add",
            b.invariance()
        ));
    }
    if w.dtype.is_quant() {
        if let Support::No(why) = crate::backend::wgpu::quant::supports_linear_add(b, w) {
            return Support::No(why);
        }
    } else if !matches!(
        plan(b, m, k, n, coop_dtypes(x.dtype, w.dtype, y.dtype)),
        Plan::Matvec { .. }
    ) {
        return Support::No(format!(
            "{m} x {k} x {n} takes a cooperative-matrix kernel here, which has no residual epilogue: linear, then add"
        ));
    }
    super::supports(
        b,
        &OpDesc::new(Op::Linear, desc.inputs[..2].to_vec(), desc.outputs.clone()),
    )
}

/// Inputs x, w, r; output y = r + x Wᵀ. y is bound for writing beside r and x for reading, so it
/// may share no memory with them.
pub(super) fn record(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (x, w, r, y) = (i[0], i[1], i[2], o[0]);
    for t in [x, r] {
        if b.storage(t)?.id == b.storage(y)?.id {
            return Err(Error::Other(
                "linear_add: the output shares a buffer with an input (bound for reading and writing at once)".into(),
            ));
        }
    }
    let (m, k, n) = (x.shape[0], w.shape[1], w.shape[0]);
    if m == 0 || n == 0 {
        return Ok(());
    }
    if w.dtype.is_quant() {
        return crate::backend::wgpu::quant::record_linear_add(b, x, w, r, y);
    }
    let gemm_dtypes = coop_dtypes(x.dtype, w.dtype, y.dtype);
    launch(b, plan(b, m, k, n, gemm_dtypes), &[x, w], &[y], false, None, Some(r))
}
