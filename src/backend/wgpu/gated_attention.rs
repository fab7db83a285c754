//! gated_attention (Qwen3.5's full-attention block, fused): shaders/gated_attention.wgsl (Params)
//! with attention's key loop (attention_decode_loop.wgsl / attention_prefill_loop.wgsl) and
//! gated_attention_decode.wgsl (T == 1) or gated_attention_prefill.wgsl (T > 1), launched by
//! attention.rs' plan (workgroup sizes, prefill tiles).
//! One dispatch does the q/k norm, partial RoPE, the cache write, attention and the output gate.
//! The output binding takes its dtype from the OUTPUT tensor: compiled for the input's dtype it
//! would write bf16 bits through f32 pointers.
use super::attention::{plan, supports_kernels, Shape, DECODE_NT};
use super::kernel::{read, write, Access, Binding};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Tensors bound by both kernels.
const BINDINGS: usize = 10;

/// Workgroup memory of gated_attention_decode in bytes: decode_attend's, dk_s, dv_s, dss_s.
fn decode_smem(dh: usize) -> usize {
    super::attention::decode_smem(dh) + 2 * 4 * dh + 8 * DECODE_NT
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 12],
    shape: Shape,
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
    supports_kernels(b, desc, t, dh, decode_smem(dh))
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
    // one query head a workgroup: the kernel norms and rotates its Q tile in workgroup memory
    let plan = plan(b, op, t, hq, dh, 1)?;
    let helpers = cache_helpers("kc", 8, o[1].dtype) + &cache_helpers("vc", 9, o[2].dtype);
    let body = plan.body(
        b,
        "gated_attention.wgsl",
        &helpers,
        ["gated_attention_decode.wgsl", "gated_attention_prefill.wgsl"],
    );
    let p = Params {
        offs: [0; 12],
        shape: plan.shape(t, hq, hkv, dh, n_past, scale),
        half: (rotary_dim / 2) as u32,
        eps,
        pad: [0; 2],
    };
    let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], i[6], o[0], o[1], o[2]];
    let entries = ["gated_attention_decode", "gated_attention_prefill"];
    plan.dispatch(b, entries, bindings, &body, bytemuck::bytes_of(&p), &tensors, hq)
}
