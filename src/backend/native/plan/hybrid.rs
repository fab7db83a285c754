//! The native plan of the Qwen3.5 ops: embedding_shard, the causal conv1d family, the Gated DeltaNet
//! family, rms_norm_gated, gated_attention, and the per-sequence state-slot variants.
use super::Launch;
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::op::{Op, OpDesc};

/// Whether the hip/ kernels run `desc` (the Qwen3.5 ops); the reason when not.
pub fn supports(desc: &OpDesc) -> Support {
    match desc.op {
        Op::GdnRecurrent | Op::GdnChunked | Op::GdnBatch => super::gdn::supports(desc),
        _ => Support::No(format!("no hip/ kernel for {} yet", desc.op.name())),
    }
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, ptrs: &[Arg], _wave: u32) -> Vec<Launch> {
    match desc.op {
        Op::GdnRecurrent | Op::GdnChunked | Op::GdnBatch => super::gdn::launches(desc, ptrs),
        _ => unreachable!("{} is refused by supports", desc.op.name()),
    }
}
