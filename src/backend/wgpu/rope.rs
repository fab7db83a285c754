//! rope: shaders/rope.wgsl. NeoX rotate-half on the first rotary_dim dims of each head, the rest
//! passed through (raw bits when x and y share a dtype: variant `raw`, else `cvt`).
//! One flat grid of work items, each owning two adjacent rotary pairs or two pass-through dims.
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
    h: u32,
    dh: u32,
    half: u32,
    npos: u32,
    items: u32,
    rot_items: u32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let biggest = desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .map(|t| t.numel())
        .max()
        .unwrap_or(0);
    if biggest as u64 >= u32::MAX as u64 {
        return Support::No(format!("{biggest} elements exceed u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::Rope { rotary_dim } = *op else { unreachable!() };
    let (x, pos, cos, sin, y) = (i[0], i[1], i[2], i[3], o[0]);
    let (t, h, dh) = (x.shape[0], x.shape[1], x.shape[2]);
    let half = rotary_dim / 2;
    let rot_items = half.div_ceil(2);
    let items = rot_items + (dh - rotary_dim).div_ceil(2);
    let n = t * h * items;
    if n == 0 {
        return Ok(());
    }
    let raw = x.dtype == y.dtype;
    let key = KernelKey {
        entry: "rope",
        bindings: vec![
            read("x", x.dtype),
            read("pos", DType::U32),
            read("cos", DType::F32),
            read("sin", DType::F32),
            write("y", y.dtype),
        ],
        variant: if raw { "raw".into() } else { "cvt".into() },
    };
    let p = Params {
        offs: [0; 8],
        n: n as u32,
        h: h as u32,
        dh: dh as u32,
        half: half as u32,
        npos: cos.shape[0] as u32,
        items: items as u32,
        rot_items: rot_items as u32,
        pad: 0,
    };
    let groups = (n as u32).div_ceil(WG);
    let consts = [("WG", format!("{WG}u")), ("RAW", raw.to_string())];
    b.dispatch(
        &key,
        || (b.source("rope.wgsl").to_string(), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &[x, pos, cos, sin, y],
        grid(groups),
    )
}
