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
    let bindings = vec![
        read("x", i[0].dtype),
        read("z", i[1].dtype),
        read("w", i[2].dtype),
        write("y", o[0].dtype),
    ];
    let tensors = [i[0], i[1], i[2], o[0]];
    dispatch_rows(
        b,
        "rms_norm_gated",
        b.source("rms_norm_gated.wgsl"),
        bindings,
        &tensors,
        i[2].shape[0],
        eps,
        false,
    )
}
