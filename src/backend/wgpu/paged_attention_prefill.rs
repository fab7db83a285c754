//! paged_attention for a batch of one sequence's prefill chunk (T > 1) under
//! `BatchInvariance::Off`, where nothing asks a row's bits to match what it would get in another
//! batch: attention_prefill.wgsl's tile (the single-stream prefill's, attention.rs' `plan`) over
//! the sequence's keys in the pools, shaders/paged_attention_prefill.wgsl giving it the paged
//! key rows and the position from seqs. A query block's rows share each staged key block, which
//! paged_attention's per-row partitions (the invariant kernel every other batch takes) cannot:
//! it is what a lone request's prefill (`wgllm run` on the engine) needs to be as fast as a
//! contiguous cache's.
use super::attention::{ld4_with, partitioned, plan, Shape};
use super::attention_parts;
use super::kernel::{read, read4, write, Binding};
use super::paged_attention::pool_bs;
use super::WgpuBackend;
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::Op;
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    shape: Shape,
    bs: u32,
    nb: u32,
    mb: u32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 80);

/// `fn ld4_{name}(i) -> vec4<f32>`: elements i..i+4 of an f32 binding at `slot` bound as vec4
/// words (`read4`), its element offset and every i a multiple of 4 (a pool row is head_dim floats,
/// head_dim a multiple of 4: attention's `supports`).
fn ld4_wide(name: &str, slot: usize) -> String {
    let off = format!("p.offs[{}u][{}u]", slot / 4, slot % 4);
    format!("fn ld4_{name}(i: u32) -> vec4<f32> {{ return bitcast<vec4<f32>>({name}_v4[({off} + i) >> 2u]); }}\n")
}

/// Whether paged_attention with query `q` and block tables `bt` takes this kernel: batch
/// invariance off, one sequence, more than one query row.
pub fn takes(b: &WgpuBackend, q: &Tensor, bt: &Tensor) -> bool {
    b.invariance() == BatchInvariance::Off && bt.shape[0] == 1 && q.shape[0] > 1
}

/// Records the tile over q [T, Hq, Dh], the pools kp / vp [NB, BS, Hkv, Dh], bt [1, MB] and
/// seqs [1, 3] into o; Ok(false) (nothing recorded) when no prefill tile fits head_dim.
pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &Tensor) -> Result<bool> {
    let Op::PagedAttention { scale, .. } = *op else {
        unreachable!("paged_attention_prefill::record got {}", op.name())
    };
    let (q, kp, vp, bt) = (i[0], i[1], i[2], i[3]);
    let (t, hq) = (q.shape[0], q.shape[1]);
    let (nb, bs, hkv, dh) = (kp.shape[0], kp.shape[1], kp.shape[2], kp.shape[3]);
    let Ok(plan) = plan(b, op, t, hq, dh, hq / hkv.max(1)) else {
        return Ok(false);
    };
    // the first query's position is on the device (seqs); the table's length in keys bounds it
    // (the engines size the table to the sequence), and sizes the key partitions' grid where the
    // query blocks alone would leave the GPU idle: a short chunk after a long cache
    let past = (bt.shape[1] * bs).saturating_sub(t);
    let mut plan = partitioned(b, plan, t, past, hq, dh);
    let run = plan.tile.map_or(0, |(tl, _)| tl.kp);
    let u = DType::U32;
    // f32 pools whose rows start on 16 bytes are read a vec4 a load (`ld4_wide`), where the word
    // binding takes four loads the compiler cannot merge (it does not know the index's alignment)
    let wide = [kp, vp].iter().all(|x| x.dtype == DType::F32 && x.offset % 4 == 0);
    let pool = |name, dt| if wide { read4(name, dt) } else { read(name, dt) };
    let mut bindings: Vec<Binding> = vec![
        read("q", q.dtype),
        pool("k", kp.dtype),
        pool("v", vp.dtype),
        read("bt", u),
        read("seqs", u),
        write("o", o.dtype),
    ];
    // the pools' element offsets are known here: even ones read whole words only
    let even = kp.offset % 2 == 0 && vp.offset % 2 == 0;
    let mut helpers = b.source("paged_pool.wgsl").to_string();
    for (s, bd) in bindings.iter().take(3).enumerate() {
        helpers += &match s > 0 && wide {
            true => ld4_wide(bd.name, s),
            false => ld4_with(bd.name, s, bd.dtype, s > 0 && even),
        };
    }
    let scratch = match run > 0 {
        false => None,
        true => {
            bindings.push(attention_parts::binding());
            helpers += attention_parts::HELPERS;
            Some(attention_parts::scratch(b, t, past, hq, dh, run)?)
        }
    };
    let body = plan.body(
        b,
        "paged_attention_prefill.wgsl",
        &helpers,
        ["attention_decode.wgsl", "attention_prefill.wgsl"],
    );
    let layout = if wide {
        "w"
    } else if even {
        "e"
    } else {
        ""
    };
    plan.variant = format!("paged{layout}_bs{bs}_{}", plan.variant);
    plan.consts.push(pool_bs(bs as u32));
    let p = Params {
        offs: [0; 8],
        shape: plan.shape(t, hq, hkv, dh, past, scale),
        bs: bs as u32,
        nb: nb as u32,
        mb: bt.shape[1] as u32,
        pad: 0,
    };
    let mut tensors = vec![q, kp, vp, bt, i[4], o];
    tensors.extend(scratch.as_ref());
    let entries = ["attention_decode", "attention_prefill"];
    plan.dispatch(b, entries, bindings, &body, bytemuck::bytes_of(&p), &tensors, hq)?;
    if let Some(po) = &scratch {
        let keys = bt.shape[1] * bs;
        attention_parts::merge(b, (t, hq, dh, past), run, po, o, Some((i[4], keys)))?;
    }
    Ok(true)
}
