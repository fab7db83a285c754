//! rms_norm: shaders/rms_norm.wgsl. Also serves per-head q/k norm (rows of head_dim).
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

const SRC: &str = include_str!("../../../shaders/rms_norm.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    rows: u32,
    d: u32,
    eps: f32,
    unit_offset: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNorm { eps, unit_offset } = *op else {
        unreachable!()
    };
    let d = i[1].shape[0];
    let rows = i[0].numel() / d;
    let wg: u32 = if d >= 1024 {
        256
    } else if d >= 256 {
        128
    } else {
        64
    };
    let key = KernelKey {
        entry: "rms_norm",
        bindings: vec![read("x", i[0].dtype), read("w", i[1].dtype), write("y", o[0].dtype)],
        variant: format!("wg{wg}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        d: d as u32,
        eps,
        unit_offset: unit_offset as u32,
    };
    b.dispatch(
        &key,
        SRC,
        &[("WG", format!("{wg}u"))],
        bytemuck::bytes_of(&p),
        &[i[0], i[1], o[0]],
        grid(rows as u32),
    )
}

const ADD_SRC: &str = include_str!("../../../shaders/add_rms_norm.wgsl");

/// add_rms_norm: shaders/add_rms_norm.wgsl (same Params as rms_norm).
pub fn record_add(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::AddRmsNorm { eps, unit_offset } = *op else {
        unreachable!()
    };
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
        entry: "add_rms_norm",
        bindings: vec![
            read("a", i[0].dtype),
            read("b", i[1].dtype),
            read("w", i[2].dtype),
            write("sum", o[0].dtype),
            write("y", o[1].dtype),
        ],
        variant: format!("wg{wg}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        d: d as u32,
        eps,
        unit_offset: unit_offset as u32,
    };
    b.dispatch(
        &key,
        ADD_SRC,
        &[("WG", format!("{wg}u"))],
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], o[0], o[1]],
        grid(rows as u32),
    )
}
