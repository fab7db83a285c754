//! kv_write: shaders/kv_write.wgsl, one thread per element of k (and of v), stored in the pools'
//! dtype at the token's slot.
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
    t: u32,
    row: u32,
    rows: u32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let words = desc.outputs[0].numel().max(desc.inputs[0].numel()) as u64;
    if words >= u32::MAX as u64 {
        return Support::No(format!("{words} elements overflow the kernel's u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    debug_assert!(matches!(op, Op::KvWrite));
    let ps = &o[0].shape;
    let (t, row) = (i[0].shape[0], ps[2] * ps[3]);
    let key = KernelKey {
        entry: "kv_write",
        bindings: vec![
            read("k", i[0].dtype),
            read("v", i[1].dtype),
            read("slots", DType::U32),
            write("kp", o[0].dtype),
            write("vp", o[1].dtype),
        ],
        variant: String::new(),
    };
    let p = Params {
        offs: [0; 8],
        t: t as u32,
        row: row as u32,
        rows: (ps[0] * ps[1]) as u32,
        pad: 0,
    };
    b.dispatch(
        &key,
        || (b.source("kv_write.wgsl").to_string(), vec![("WG", format!("{WG}u"))]),
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], o[0], o[1]],
        grid(((t * row) as u32).div_ceil(WG)),
    )
}
