//! Row reductions, one workgroup per row, each its own module (a module's entry points may only
//! use the bindings the generated prelude declares):
//!   softmax (shaders/softmax.wgsl): online (max, sum) per invocation, merged in workgroup memory.
//!   argmax  (shaders/argmax.wgsl):  (key, index) reduction on order-preserving integer keys.
//!   topk    (shaders/topk.wgsl):    k rounds; per-invocation candidates, only the loser rescans.
//! The workgroup size (variant `wg{N}`) grows with the row length.
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
    c: u32,
    k: u32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

/// Invocations per workgroup for rows of `c` columns (at most 256, the WebGPU default limit).
fn workgroup(c: usize) -> u32 {
    if c >= 4096 {
        256
    } else if c >= 512 {
        128
    } else {
        64
    }
}

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let x = &desc.inputs[0];
    // Column indices (plus one workgroup stride in topk) are u32 in the kernels.
    if x.numel() as u64 >= (u32::MAX - (1 << 17)) as u64 {
        return Support::No(format!("{} elements exceed u32 indexing", x.numel()));
    }
    if x.shape[0] > 0 && x.shape[1] == 0 {
        return Support::No("rows of zero columns".into());
    }
    Support::Yes
}

/// Rows longer than this are split over several workgroups (argmax_partial + argmax_final).
const SPLIT: usize = 8192;

fn argmax(b: &WgpuBackend, x: &Tensor, idx: &Tensor, wg: u32) -> Result<()> {
    let (rows, c) = (x.shape[0], x.shape[1]);
    let chunks = if c > SPLIT { c.div_ceil(4096).min(256) } else { 1 };
    let part = b.scratch("argmax-part", DType::U32, rows * chunks * 2)?;
    let consts = [("WG", format!("{wg}u"))];
    let mk = |entry| KernelKey {
        entry,
        bindings: vec![read("x", x.dtype), write("part", DType::U32), write("idx", DType::U32)],
        variant: format!("wg{wg}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        c: c as u32,
        k: chunks as u32,
        pad: 0,
    };
    let t = [x, &part, idx];
    if chunks == 1 {
        return b.dispatch(
            &mk("argmax"),
            || (b.source("argmax.wgsl").to_string(), consts.to_vec()),
            bytemuck::bytes_of(&p),
            &t,
            grid(rows as u32),
        );
    }
    b.dispatch(
        &mk("argmax_partial"),
        || (b.source("argmax.wgsl").to_string(), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &t,
        grid((rows * chunks) as u32),
    )?;
    b.dispatch(
        &mk("argmax_final"),
        || (b.source("argmax.wgsl").to_string(), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &t,
        grid(rows as u32),
    )
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let x = i[0];
    let (rows, c) = (x.shape[0], x.shape[1]);
    if rows == 0 {
        return Ok(());
    }
    let wg = workgroup(c);
    let (entry, src, bindings, k) = match *op {
        Op::Softmax => (
            "softmax",
            b.source("softmax.wgsl"),
            vec![read("x", x.dtype), write("y", o[0].dtype)],
            0,
        ),
        Op::Argmax => return argmax(b, x, o[0], wg),
        Op::TopK { k } => (
            "topk",
            b.source("topk.wgsl"),
            vec![read("x", x.dtype), write("vals", o[0].dtype), write("idx", DType::U32)],
            k,
        ),
        _ => unreachable!("reduce::record got {}", op.name()),
    };
    let key = KernelKey {
        entry,
        bindings,
        variant: format!("wg{wg}"),
    };
    let p = Params {
        offs: [0; 8],
        rows: rows as u32,
        c: c as u32,
        k: k as u32,
        pad: 0,
    };
    let mut tensors = vec![x];
    tensors.extend_from_slice(o);
    b.dispatch(
        &key,
        || (src.to_string(), vec![("WG", format!("{wg}u"))]),
        bytemuck::bytes_of(&p),
        &tensors,
        grid(rows as u32),
    )
}
