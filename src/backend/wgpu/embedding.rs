//! embedding: shaders/embedding.wgsl. out[t, :] = table[ids[t], :], zeros for an id >= V.
//! embedding_shard: the rows whose id falls in the shard [first, first + V), others untouched.
//! Same dtype in and out copies raw bits (variant `raw`); otherwise each element is decoded to f32
//! and re-encoded in the output dtype (variant `cvt`), the same rounding as the host encoder.
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

const WG: u32 = 128;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    n: u32,
    d: u32,
    v: u32,
    /// first vocabulary row of the table (embedding_shard)
    first: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    if desc.inputs[0].dtype.is_quant() {
        return super::quant::supports(b, desc);
    }
    // Element indices are u32 in the kernel.
    let n = desc.outputs[0].numel().max(desc.inputs[0].numel());
    let first = match desc.op {
        Op::EmbeddingShard { first } => first,
        _ => 0,
    };
    if n as u64 >= u32::MAX as u64 || (first + desc.inputs[0].shape[0]) as u64 >= u32::MAX as u64 {
        return Support::No(format!("{n} elements exceed u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    if i[0].dtype.is_quant() {
        return super::quant::record_embed(b, op, i, o);
    }
    let (table, ids, y) = (i[0], i[1], o[0]);
    let (entry, first) = match op {
        Op::Embedding => ("embedding", 0),
        Op::EmbeddingShard { first } => ("embedding_shard", *first),
        _ => unreachable!("embed::record got {}", op.name()),
    };
    let (v, d) = (table.shape[0], table.shape[1]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let raw = table.dtype == y.dtype;
    let key = KernelKey {
        entry,
        bindings: vec![read("table", table.dtype), read("ids", DType::U32), write("y", y.dtype)],
        variant: if raw { "raw".into() } else { "cvt".into() },
    };
    let p = Params {
        offs: [0; 8],
        n: n as u32,
        d: d as u32,
        v: v.min(u32::MAX as usize) as u32,
        first: first.min(u32::MAX as usize) as u32,
    };
    let groups = (n.div_ceil(2) as u32).div_ceil(WG);
    let consts = [("WG", format!("{WG}u")), ("RAW", raw.to_string())];
    b.dispatch(
        &key,
        || (b.source("embedding.wgsl").to_string(), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &[table, ids, y],
        grid(groups),
    )
}
