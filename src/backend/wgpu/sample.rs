//! sample, two dispatches (each module is shaders/sample_weight.wgsl, the integer weights, and
//! sample_tree.wgsl, the best-(key, id) reduction, plus):
//!   sample_head.wgsl, `sample_parts`: one workgroup a (row, part of PART logits): the part's best
//!     (okey, id) and sum of exp into a scratch [rows, parts, 4] u32, so the row-wide work every
//!     row needs is spread over rows x parts workgroups (64 rows are 64 workgroups otherwise);
//!   sample.wgsl, `sample`: one workgroup of 256 a row (the radix searches' histograms have 256
//!     bins, one an invocation): the head and the logprobs' sum from the parts, and only sampling
//!     rows (and K alternatives) walk the row.
//! PART depends on nothing (the parts of a row depend on V only): a row's bits never depend on
//! the batch.
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    rows: u32,
    v: u32,
    k: u32,
    parts: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

const WG: u32 = 256;
/// Logits a part: 16 an invocation, all loaded at once (sample_head.wgsl). 152k-token rows are 38
/// parts.
const PART: usize = 16 * WG as usize;

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let n = desc.inputs[0].numel() as u64;
    // element indices plus one workgroup stride are u32 in the kernel
    if n + WG as u64 >= u32::MAX as u64 {
        return Support::No(format!("{n} elements exceed u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::Sample { k } = *op else {
        unreachable!("sample::record got {}", op.name())
    };
    let (rows, v) = (i[0].shape[0], i[0].shape[1]);
    if rows == 0 {
        return Ok(());
    }
    let parts = v.div_ceil(PART);
    let part = b.scratch("sample-part", DType::U32, rows * parts * 4)?;
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        v: v as u32,
        k: k as u32,
        parts: parts as u32,
    };
    let consts = [("WG", format!("{WG}u"))];
    // the integer weights and the (key, id) tree, shared by both modules
    let weights = format!("{}\n{}", b.source("sample_weight.wgsl"), b.source("sample_tree.wgsl"));
    let head = KernelKey {
        entry: "sample_parts",
        bindings: vec![read("logits", DType::F32), write("part", DType::U32)],
        variant: format!("wg{WG}"),
    };
    b.dispatch(
        &head,
        || (format!("{weights}\n{}", b.source("sample_head.wgsl")), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &[i[0], &part],
        grid((rows * parts) as u32),
    )?;
    let key = KernelKey {
        entry: "sample",
        bindings: vec![
            read("logits", DType::F32),
            read("params", DType::F32),
            read("part", DType::U32),
            write("ids", DType::U32),
            write("logprobs", DType::F32),
        ],
        variant: format!("wg{WG}"),
    };
    b.dispatch(
        &key,
        || (format!("{weights}\n{}", b.source("sample.wgsl")), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &[i[0], i[1], &part, o[0], o[1]],
        grid(rows as u32),
    )
}
