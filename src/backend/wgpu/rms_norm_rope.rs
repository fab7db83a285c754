//! rms_norm_rope (fused per-head q/k norm + RoPE): shaders/rms_norm_rope.wgsl, with
//! shaders/wg_sum.wgsl prepended (rms_norm.rs `WG_SUM`).
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
    heads: u32,
    d: u32,
    rot: u32,
    eps: f32,
    max_pos: u32,
    /// Dh when w is [H, Dh] (a weight row a head), else 0
    wstride: u32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNormRope { eps, rotary_dim } = *op else {
        unreachable!()
    };
    let (t, h, d) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
    let wg: u32 = if d > 128 { 128 } else { 64 };
    let key = KernelKey {
        entry: "rms_norm_rope",
        bindings: vec![
            read("x", i[0].dtype),
            read("w", i[1].dtype),
            read("pos", DType::U32),
            read("cos", DType::F32),
            read("sin", DType::F32),
            write("y", o[0].dtype),
        ],
        variant: format!("wg{wg}"),
    };
    let rows = t * h;
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        heads: h as u32,
        d: d as u32,
        rot: rotary_dim as u32,
        eps,
        max_pos: i[3].shape[0] as u32,
        wstride: if i[1].shape.len() == 2 { d as u32 } else { 0 },
        pad: 0,
    };
    b.dispatch(
        &key,
        &format!("{}\n{}", b.source("wg_sum.wgsl"), b.source("rms_norm_rope.wgsl")),
        &[("WG", format!("{wg}u"))],
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], i[3], i[4], o[0]],
        grid(rows as u32),
    )
}
