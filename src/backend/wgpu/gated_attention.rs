//! gated_attention (Qwen3.5's full-attention block, fused): shaders/gated_attention.wgsl (Params and
//! helpers) prepended to gated_attention_decode.wgsl (T == 1) or gated_attention_prefill.wgsl (T > 1).
//! One dispatch does the q/k norm, partial RoPE, the cache write, attention and the output gate.
//! The output binding takes its dtype from the OUTPUT tensor: compiled for the input's dtype it
//! would write bf16 bits through f32 pointers.
use super::kernel::{grid, read, write, Access, Binding, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

const HEAD: &str = include_str!("../../../shaders/gated_attention.wgsl");
const DECODE: &str = include_str!("../../../shaders/gated_attention_decode.wgsl");
const PREFILL: &str = include_str!("../../../shaders/gated_attention_prefill.wgsl");

const DECODE_NT: usize = 256;
const PREFILL_NT: usize = 128;
/// Tensors bound by both kernels.
const BINDINGS: usize = 10;

/// Prefill tiles (BQ queries, BK keys, TM x TN score micro-tile per thread), most preferred first;
/// (BQ / TM) * (BK / TN) == PREFILL_NT, and BQ, BK <= PREFILL_NT (one thread per staged row).
const TILES: [(usize, usize, usize, usize); 4] = [(32, 32, 2, 4), (32, 16, 2, 2), (16, 16, 1, 2), (16, 8, 1, 1)];

fn prefill_smem(bq: usize, bk: usize, dh: usize) -> usize {
    let qs = dh / 4 + 1;
    16 * (bq + bk) * qs + 4 * bq * (bk + 1) + 12 * bq
}
fn decode_smem(dh: usize) -> usize {
    3 * 4 * dh + 4 * DECODE_NT + 4 * 16 + 16 * DECODE_NT + 8 * DECODE_NT
}
fn tile(b: &WgpuBackend, dh: usize) -> Option<(usize, usize, usize, usize)> {
    TILES
        .into_iter()
        .find(|&(bq, bk, _, _)| prefill_smem(bq, bk, dh) <= b.caps.max_workgroup_storage as usize)
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 12],
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,
    group: u32,
    scale: f32,
    nqb: u32,
    half: u32,
    eps: f32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 96);

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (t, dh) = (desc.inputs[0].shape[0], desc.inputs[0].shape[2] / 2);
    if dh % 4 != 0 {
        return Support::No(format!("head_dim {dh} must be a multiple of 4 (vec4 kernels)"));
    }
    if t == 0 {
        return Support::No("no tokens".into());
    }
    if (b.caps.max_storage_buffers as usize) < BINDINGS {
        return Support::No(format!(
            "binds {BINDINGS} storage buffers, the device allows {} per stage",
            b.caps.max_storage_buffers
        ));
    }
    let words = desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .map(|d| d.numel())
        .max()
        .unwrap_or(0);
    if words as u64 >= u32::MAX as u64 {
        return Support::No(format!("{words} elements overflow the kernels' u32 indexing"));
    }
    let smem = b.caps.max_workgroup_storage as usize;
    if t == 1 {
        if dh / 4 > DECODE_NT || decode_smem(dh) > smem || DECODE_NT > b.caps.max_invocations as usize {
            return Support::No(format!(
                "decode head_dim {dh} needs {} B workgroup memory and {DECODE_NT} invocations",
                decode_smem(dh)
            ));
        }
    } else if tile(b, dh).is_none() || PREFILL_NT > b.caps.max_invocations as usize {
        let (bq, bk, _, _) = TILES[TILES.len() - 1];
        return Support::No(format!(
            "prefill head_dim {dh} needs {} B workgroup memory, device has {smem}",
            prefill_smem(bq, bk, dh)
        ));
    }
    Support::Yes
}

/// `fn ld4_{n}(i) -> vec4<f32>` (elements i..i+4 of an in-out cache binding) and
/// `fn rnd_{n}(v) -> f32` (v as the cache stores it: rounded to its dtype and back).
fn cache_helpers(n: &str, slot: usize, dt: DType) -> String {
    let off = format!("p.offs[{}u][{}u]", slot / 4, slot % 4);
    match dt {
        DType::F32 => format!(
            "fn ld4_{n}(i: u32) -> vec4<f32> {{ let j = {off} + i; return bitcast<vec4<f32>>(vec4<u32>({n}_buf[j], {n}_buf[j + 1u], {n}_buf[j + 2u], {n}_buf[j + 3u])); }}\n\
             fn rnd_{n}(v: f32) -> f32 {{ return v; }}\n"
        ),
        DType::F16 => format!(
            "fn ld4_{n}(i: u32) -> vec4<f32> {{ return vec4<f32>(ld_{n}(i), ld_{n}(i + 1u), ld_{n}(i + 2u), ld_{n}(i + 3u)); }}\n\
             fn rnd_{n}(v: f32) -> f32 {{ return f16_bits_to_f32(f32_to_f16_bits(v)); }}\n"
        ),
        DType::BF16 => format!(
            "fn ld4_{n}(i: u32) -> vec4<f32> {{ return vec4<f32>(ld_{n}(i), ld_{n}(i + 1u), ld_{n}(i + 2u), ld_{n}(i + 3u)); }}\n\
             fn rnd_{n}(v: f32) -> f32 {{ return bf16_bits_to_f32(f32_to_bf16_bits(v)); }}\n"
        ),
        _ => unreachable!("caches are float"),
    }
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::GatedAttention {
        n_past,
        scale,
        eps,
        rotary_dim,
    } = *op
    else {
        unreachable!()
    };
    let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2] / 2);
    let hkv = i[1].shape[1];
    let bindings: Vec<Binding> = vec![
        read("qg", i[0].dtype),
        read("k", i[1].dtype),
        read("v", i[2].dtype),
        read("qn", i[3].dtype),
        read("kn", i[4].dtype),
        read("cos", DType::F32),
        read("sin", DType::F32),
        write("o", o[0].dtype),
        write("kc", o[1].dtype),
        write("vc", o[2].dtype),
    ];
    debug_assert!(bindings.len() == BINDINGS && bindings[8].access == Access::Write);
    let mut body = String::from(HEAD);
    body.push_str(&cache_helpers("kc", 8, o[1].dtype));
    body.push_str(&cache_helpers("vc", 9, o[2].dtype));
    let mut p = Params {
        offs: [0; 12],
        t: t as u32,
        hq: hq as u32,
        hkv: hkv as u32,
        dh: dh as u32,
        n_past: n_past as u32,
        group: (hq / hkv) as u32,
        scale,
        nqb: 1,
        half: (rotary_dim / 2) as u32,
        eps,
        pad: [0; 2],
    };
    let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], i[6], o[0], o[1], o[2]];
    if t == 1 {
        body.push_str(DECODE);
        let key = KernelKey {
            entry: "gated_attention_decode",
            bindings,
            variant: format!("dh{dh}"),
        };
        let consts = [("DH4", format!("{}u", dh / 4)), ("NTD", format!("{DECODE_NT}u"))];
        return b.dispatch(&key, &body, &consts, bytemuck::bytes_of(&p), &tensors, grid(hq as u32));
    }
    let (bq, bk, tm, tn) =
        tile(b, dh).ok_or_else(|| Error::Other(format!("gated_attention: no prefill tile fits head_dim {dh}")))?;
    body.push_str(PREFILL);
    p.nqb = t.div_ceil(bq) as u32;
    let key = KernelKey {
        entry: "gated_attention_prefill",
        bindings,
        variant: format!("dh{dh}_q{bq}k{bk}"),
    };
    let consts = [
        ("DH4", format!("{}u", dh / 4)),
        ("BQ", format!("{bq}u")),
        ("BK", format!("{bk}u")),
        ("TM", format!("{tm}u")),
        ("TN", format!("{tn}u")),
        ("NTP", format!("{PREFILL_NT}u")),
    ];
    b.dispatch(
        &key,
        &body,
        &consts,
        bytemuck::bytes_of(&p),
        &tensors,
        grid(p.nqb * hq as u32),
    )
}
