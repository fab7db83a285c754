//! min_p: shaders/min_p.wgsl, one workgroup per row (a max reduction, then the row written).
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::OpDesc;
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    rows: u32,
    v: u32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

/// Invocations per workgroup (a power of two, for the tree reduction): a vocabulary row gets 256.
fn workgroup(v: usize) -> u32 {
    if v >= 4096 {
        256
    } else {
        64
    }
}

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let n = desc.inputs[0].numel() as u64;
    // column indices plus one workgroup stride are u32 in the kernel
    if n + 256 >= u32::MAX as u64 {
        return Support::No(format!("{n} elements exceed u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (rows, v) = (i[0].shape[0], i[0].shape[1]);
    if rows == 0 {
        return Ok(());
    }
    let wg = workgroup(v);
    let key = KernelKey {
        entry: "min_p",
        bindings: vec![
            read("logits", DType::F32),
            read("margin", DType::F32),
            write("out", DType::F32),
        ],
        variant: format!("wg{wg}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        v: v as u32,
        pad: [0; 2],
    };
    b.dispatch(
        &key,
        || (b.source("min_p.wgsl").to_string(), vec![("WG", format!("{wg}u"))]),
        bytemuck::bytes_of(&p),
        &[i[0], i[1], o[0]],
        grid(rows as u32),
    )
}
