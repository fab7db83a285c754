//! penalties: shaders/penalties.wgsl, one work item per element of the [R, V] logits.
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::OpDesc;
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

const WG: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    rows: u32,
    v: u32,
    n: u32,
    /// always 0 (the kernel XORs products with it so no compiler fuses them: penalties.wgsl)
    zero: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let n = desc.inputs[0].numel() as u64;
    // element indices, plus one workgroup past the last, are u32 in the kernel
    if n + WG as u64 >= u32::MAX as u64 {
        return Support::No(format!("{n} elements exceed u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (rows, v) = (i[0].shape[0], i[0].shape[1]);
    let n = rows * v;
    if n == 0 {
        return Ok(());
    }
    let key = KernelKey {
        entry: "penalties",
        bindings: vec![
            read("logits", DType::F32),
            read("counts", DType::U32),
            read("params", DType::F32),
            write("out", DType::F32),
        ],
        variant: String::new(),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        v: v as u32,
        n: n as u32,
        zero: 0,
    };
    b.dispatch(
        &key,
        || (b.source("penalties.wgsl").to_string(), vec![("WG", format!("{WG}u"))]),
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], o[0]],
        grid((n as u32).div_ceil(WG)),
    )
}
