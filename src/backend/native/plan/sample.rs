//! The native plan of the sampling ops: penalties, min_p, sample.
use super::Launch;
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::op::OpDesc;

/// Whether the hip/ kernels run `desc` (the sampling ops); the reason when not.
pub fn supports(desc: &OpDesc) -> Support {
    Support::No(format!("no hip/ kernel for {} yet", desc.op.name()))
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, _ptrs: &[Arg], _wave: u32) -> Vec<Launch> {
    unreachable!("{} is refused by supports", desc.op.name())
}
