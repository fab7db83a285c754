//! sample: shaders/sample_weight.wgsl (the integer weights) + sample.wgsl, one workgroup of 256 per row (the radix searches' histograms have
//! 256 bins, one an invocation).
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
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

const WG: u32 = 256;

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
    let key = KernelKey {
        entry: "sample",
        bindings: vec![
            read("logits", DType::F32),
            read("params", DType::F32),
            write("ids", DType::U32),
            write("logprobs", DType::F32),
        ],
        variant: format!("wg{WG}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        v: v as u32,
        k: k as u32,
        pad: 0,
    };
    b.dispatch(
        &key,
        &format!("{}\n{}", b.source("sample_weight.wgsl"), b.source("sample.wgsl")),
        &[("WG", format!("{WG}u"))],
        bytemuck::bytes_of(&p),
        &[i[0], i[1], o[0], o[1]],
        grid(rows as u32),
    )
}
