//! rms_norm_gated: shaders/rms_norm_gated.wgsl, one workgroup per row.
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

const SRC: &str = include_str!("../../../shaders/rms_norm_gated.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    rows: u32,
    d: u32,
    eps: f32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNormGated { eps } = *op else { unreachable!() };
    let d = i[2].shape[0];
    let rows = i[0].numel() / d;
    let wg: u32 = if d >= 1024 {
        256
    } else if d >= 256 {
        128
    } else {
        64
    };
    let key = KernelKey {
        entry: "rms_norm_gated",
        bindings: vec![
            read("x", i[0].dtype),
            read("z", i[1].dtype),
            read("w", i[2].dtype),
            write("y", o[0].dtype),
        ],
        variant: format!("wg{wg}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        d: d as u32,
        eps,
        pad: 0,
    };
    b.dispatch(
        &key,
        SRC,
        &[("WG", format!("{wg}u"))],
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], o[0]],
        grid(rows as u32),
    )
}
