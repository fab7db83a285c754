//! rms_norm_rope (fused per-head q/k norm + RoPE): shaders/rms_norm_rope.wgsl; and
//! rms_norm_rope_kv (the same rows of a stacked q/k/v projection, k and v stored into the KV
//! pools): shaders/rms_norm_rope_kv.wgsl. Both have shaders/wg_sum.wgsl and the shared row,
//! shaders/rms_norm_rope_row.wgsl, prepended.
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

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct KvParams {
    offs: [u32; 12],
    t: u32,
    hq: u32,
    hkv: u32,
    d: u32,
    rot: u32,
    eps: f32,
    max_pos: u32,
    wstride: u32,
    rows: u32,
    pad: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<KvParams>() == 96);

/// rms_norm_rope_kv's storage bindings: x, w, pos, cos, sin, slots, q, k_pool, v_pool.
const KV_BINDINGS: u32 = 9;

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    if let Op::RmsNormRopeKv { .. } = desc.op {
        if b.caps.max_storage_buffers < KV_BINDINGS {
            return Support::No(format!(
                "needs {KV_BINDINGS} storage buffers a shader stage, the adapter allows {}",
                b.caps.max_storage_buffers
            ));
        }
        if desc.outputs[1].numel() >= u32::MAX as usize || desc.inputs[0].numel() >= u32::MAX as usize {
            return Support::No("an operand overflows the kernel's u32 indexing".into());
        }
    }
    Support::Yes
}

fn row_source(b: &WgpuBackend, kernel: &str) -> String {
    format!(
        "{}\n{}\n{}\n{}",
        b.source("wg_tree.wgsl"),
        b.source("wg_sum.wgsl"),
        b.source("rms_norm_rope_row.wgsl"),
        b.source(kernel)
    )
}

/// The workgroup of a head row of `d` elements.
fn wg_of(d: usize) -> u32 {
    if d > 128 {
        128
    } else {
        64
    }
}

pub fn record_kv(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    dispatch_kv(b, op, i, o, None)
}

/// rms_norm_rope_kv.wgsl over `i` = (x, w, pos, cos, sin, slots) into `o` = (q, k_pool, v_pool).
/// With `split` = (S, prefix), i[0] is instead a split-K linear's [S, T, N] partials (bound as
/// `part`) and `prefix` the WGSL put first, whose `ld_x` adds them (linear_rms_norm_rope_kv).
pub(crate) fn dispatch_kv(
    b: &WgpuBackend,
    op: &Op,
    i: &[&Tensor],
    o: &[&Tensor],
    split: Option<(usize, &dyn Fn() -> String)>,
) -> Result<()> {
    let Op::RmsNormRopeKv { eps, rotary_dim } = *op else {
        unreachable!()
    };
    let (t, hq, d) = (o[0].shape[0], o[0].shape[1], o[0].shape[2]);
    let ps = &o[1].shape;
    let hkv = ps[2];
    let wg = wg_of(d);
    let (x, variant) = match split {
        None => (read("x", i[0].dtype), format!("wg{wg}")),
        Some((s, _)) => (read("part", DType::F32), format!("wg{wg}_splits{s}")),
    };
    let key = KernelKey {
        entry: "rms_norm_rope_kv",
        bindings: vec![
            x,
            read("w", i[1].dtype),
            read("pos", DType::U32),
            read("cos", DType::F32),
            read("sin", DType::F32),
            read("slots", DType::U32),
            write("q", o[0].dtype),
            write("kp", o[1].dtype),
            write("vp", o[2].dtype),
        ],
        variant,
    };
    let p = KvParams {
        offs: [0; 12],
        t: t as u32,
        hq: hq as u32,
        hkv: hkv as u32,
        d: d as u32,
        rot: rotary_dim as u32,
        eps,
        max_pos: i[3].shape[0] as u32,
        wstride: if i[1].shape.len() == 2 { d as u32 } else { 0 },
        rows: (ps[0] * ps[1]) as u32,
        pad: [0; 3],
    };
    let src = || {
        let body = row_source(b, "rms_norm_rope_kv.wgsl");
        let src = match split {
            Some((_, prefix)) => format!("{}\n{body}", prefix()),
            None => body,
        };
        (src, vec![("WG", format!("{wg}u"))])
    };
    b.dispatch(
        &key,
        src,
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], i[3], i[4], i[5], o[0], o[1], o[2]],
        grid((t * (hq + 2 * hkv)) as u32),
    )
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNormRope { eps, rotary_dim } = *op else {
        unreachable!()
    };
    let (t, h, d) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
    let wg = wg_of(d);
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
        || (row_source(b, "rms_norm_rope.wgsl"), vec![("WG", format!("{wg}u"))]),
        bytemuck::bytes_of(&p),
        &[i[0], i[1], i[2], i[3], i[4], o[0]],
        grid(rows as u32),
    )
}
