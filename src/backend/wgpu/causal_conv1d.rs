//! causal_conv1d, causal_conv1d_update: shaders/causal_conv1d.wgsl. One work item per output element
//! (prefill, plus one per state element) or per channel (the decode update).
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
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
    c: u32,
    k: u32,
    n: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (t, c, k) = (
        desc.inputs[0].shape[0],
        desc.inputs[0].shape[1],
        desc.inputs[1].shape[1],
    );
    if ((t + k) as u64) * c as u64 >= u32::MAX as u64 {
        return Support::No(format!("{t} x {c} elements exceed u32 indexing"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (t, c, k) = (i[0].shape[0], i[0].shape[1], i[1].shape[1]);
    let (entry, n) = match op {
        Op::CausalConv1d => ("causal_conv1d", (t + k - 1) * c),
        Op::CausalConv1dUpdate => ("causal_conv1d_update", c),
        _ => unreachable!("causal_conv1d::record got {}", op.name()),
    };
    let key = KernelKey {
        entry,
        bindings: vec![
            read("x", i[0].dtype),
            read("w", i[1].dtype),
            read("state", i[2].dtype),
            write("y", o[0].dtype),
            write("state_out", o[1].dtype),
        ],
        variant: String::new(),
    };
    let p = Params {
        offs: [0; 8],
        t: t as u32,
        c: c as u32,
        k: k as u32,
        n: n as u32,
    };
    b.dispatch(
        &key,
        b.source("causal_conv1d.wgsl"),
        &[("WG", format!("{WG}u"))],
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], o[0], o[1]],
        grid((n as u32).div_ceil(WG)),
    )
}
