//! causal_conv1d, causal_conv1d_update: shaders/causal_conv1d.wgsl. One work item per output element
//! (prefill, plus one per state element) or per channel (the decode update).
//! causal_conv1d_batch: shaders/causal_conv1d_batch.wgsl, two dispatches: the outputs (one item per
//! row and channel, reading the slots' states), then the states back into their slots (one item per
//! sequence and channel); a batch of as many rows as sequences (a decode step) in one dispatch,
//! one item per sequence and channel. K - 1 is a compile-time constant (the variant).
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
    c: u32,
    k: u32,
    n: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

/// causal_conv1d_batch's Params: the batch and the pool.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct BatchParams {
    offs: [u32; 8],
    t: u32,
    c: u32,
    k: u32,
    s: u32,
    slots: u32,
    n: u32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<BatchParams>() == 64);

/// Kernel sizes the batch kernel is built for (its state rows live in registers).
const BATCH_MAX_K: usize = 8;

pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    if let Op::CausalConv1dBatch = desc.op {
        let (k, pool) = (desc.inputs[1].shape[1], &desc.outputs[1]);
        if k > BATCH_MAX_K {
            return Support::No(format!("kernel size {k} over the batch kernel's {BATCH_MAX_K}"));
        }
        if desc.inputs[0].numel() as u64 >= u32::MAX as u64 || pool.numel() as u64 >= u32::MAX as u64 {
            return Support::No("an operand exceeds u32 indexing".into());
        }
        return Support::Yes;
    }
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
        Op::CausalConv1dBatch => return record_batch(b, i, o),
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
        || {
            (
                b.source("causal_conv1d.wgsl").to_string(),
                vec![("WG", format!("{WG}u"))],
            )
        },
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], o[0], o[1]],
        grid((n as u32).div_ceil(WG)),
    )
}

fn record_batch(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (t, c, k, s, slots) = (
        i[0].shape[0],
        i[0].shape[1],
        i[1].shape[1],
        i[2].shape[0],
        o[1].shape[0],
    );
    let bindings = vec![
        read("x", i[0].dtype),
        read("w", i[1].dtype),
        read("seqs", DType::U32),
        write("y", o[0].dtype),
        write("pool", DType::F32),
    ];
    let consts = [("WG", format!("{WG}u")), ("KM1", format!("{}u", k - 1))];
    let tensors = [i[0], i[1], i[2], o[0], o[1]];
    // outputs first (they read the states entering the step), then the states leaving it; in one
    // dispatch where there are as many rows as sequences (a decode step: one item a sequence and
    // channel walks that sequence's rows, which are one on average)
    let steps: &[(&'static str, usize)] = if t == s {
        &[("causal_conv1d_batch_steps", s * c)]
    } else {
        &[("causal_conv1d_batch", t * c), ("causal_conv1d_batch_state", s * c)]
    };
    for &(entry, n) in steps {
        let p = BatchParams {
            offs: [0; 8],
            t: t as u32,
            c: c as u32,
            k: k as u32,
            s: s as u32,
            slots: slots as u32,
            n: n as u32,
            pad: [0; 2],
        };
        let key = KernelKey {
            entry,
            bindings: bindings.clone(),
            variant: format!("k{k}"),
        };
        b.dispatch(
            &key,
            || (b.source("causal_conv1d_batch.wgsl").to_string(), consts.to_vec()),
            bytemuck::bytes_of(&p),
            &tensors,
            grid((n as u32).div_ceil(WG)),
        )?;
    }
    Ok(())
}
