//! linear: kernel not written yet (refused by name until it is).
use super::{Support, WgpuBackend};
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::No("no WGSL kernel for this op yet".into())
}

pub fn record(_b: &WgpuBackend, op: &Op, _i: &[&Tensor], _o: &[&Tensor]) -> Result<()> {
    Err(Error::Other(format!("{}: no WGSL kernel yet", op.name())))
}
