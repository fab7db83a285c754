//! rms_norm_gated: shaders/rms_norm_gated.wgsl, one workgroup per row, launched as rms_norm is
//! (rms_norm.rs `dispatch_rows`).
use super::kernel::{read, write};
use super::rms_norm::dispatch_rows;
use super::{Support, WgpuBackend};
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNormGated { eps } = *op else { unreachable!() };
    dispatch(b, eps, [i[0], i[1], i[2], o[0]])
}

/// y = rms_norm_gated(x, z, w) over [x, z, w, y] (gdn_conv_norm's chunked form runs it too).
pub(super) fn dispatch(b: &WgpuBackend, eps: f32, tensors: [&Tensor; 4]) -> Result<()> {
    let [x, z, w, y] = tensors;
    let bindings = vec![
        read("x", x.dtype),
        read("z", z.dtype),
        read("w", w.dtype),
        write("y", y.dtype),
    ];
    dispatch_rows(
        b,
        "rms_norm_gated",
        "",
        || b.source("rms_norm_gated.wgsl").to_string(),
        bindings,
        &tensors,
        w.shape[0],
        eps,
        false,
    )
}
