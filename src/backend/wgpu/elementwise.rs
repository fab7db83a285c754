//! swiglu, add (shaders/elementwise.wgsl); swiglu over pairs (shaders/swiglu_pairs.wgsl);
//! cast, copy (shaders/convert.wgsl).
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
    n: u32,
    pad: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

pub fn supports(_b: &WgpuBackend, _desc: &OpDesc) -> Support {
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let n = o[0].numel();
    let (entry, src, bindings, tensors) = match op {
        Op::SwiGlu if i.len() == 1 => (
            "swiglu_pairs",
            b.source("swiglu_pairs.wgsl"),
            vec![read("x", i[0].dtype), write("y", o[0].dtype)],
            vec![i[0], o[0]],
        ),
        Op::SwiGlu | Op::Add => (
            if *op == Op::Add { "add" } else { "swiglu" },
            b.source("elementwise.wgsl"),
            vec![read("a", i[0].dtype), read("b", i[1].dtype), write("y", o[0].dtype)],
            vec![i[0], i[1], o[0]],
        ),
        Op::Cast | Op::Copy => (
            if *op == Op::Cast { "convert" } else { "copy" },
            b.source("convert.wgsl"),
            vec![read("x", i[0].dtype), write("y", o[0].dtype)],
            vec![i[0], o[0]],
        ),
        _ => unreachable!("elementwise::record got {}", op.name()),
    };
    let key = KernelKey {
        entry,
        bindings,
        variant: String::new(),
    };
    let p = Params {
        offs: [0; 8],
        n: n as u32,
        pad: [0; 3],
    };
    // swiglu_pairs: one output per invocation; the others: two adjacent outputs per invocation
    let per = if entry == "swiglu_pairs" { 1 } else { 2 };
    let groups = (n.div_ceil(per) as u32).div_ceil(WG);
    b.dispatch(
        &key,
        || (src.to_string(), vec![("WG", format!("{WG}u"))]),
        bytemuck::bytes_of(&p),
        &tensors,
        grid(groups),
    )
}
