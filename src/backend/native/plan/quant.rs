//! The native plan of the ops over quantized weights (GGUF block types read as stored): the
//! linear (matvec and GEMM) and the embedding.
use super::Launch;
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::op::OpDesc;

/// Whether the hip/ kernels run `desc` (an op over quantized blocks); the reason when not.
pub fn supports(desc: &OpDesc) -> Support {
    let q = desc.inputs.iter().find(|t| t.dtype.is_quant()).map(|t| t.dtype);
    Support::No(format!("no hip/ kernel for {} over {} yet", desc.op.name(), q.unwrap()))
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, _ptrs: &[Arg], _wave: u32) -> Vec<Launch> {
    unreachable!("{} is refused by supports", desc.op.name())
}
