//! gated_attention: the fused gated full attention of Qwen3.5 (q/k norms, partial rotary, cache
//! append, attention, the sigmoid output gate). Its reference is the composition of the unfused
//! reference ops, for every (input, output) dtype pair.
use super::{normal, seed, DType, FLOATS};
use crate::op::{rope_tables, Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

/// Gated attention (T, Hq, Hkv, Dh, rotary, n_past, cache rows): the tiny model's decode and
/// prefill, the 0.8B's heads (8 q, 2 kv, head_dim 256, rotary 64), an odd T, a continuation.
const ATTN_SHAPES: [(usize, usize, usize, usize, usize, usize, usize); 7] = [
    (1, 4, 2, 64, 16, 7, 16),
    (1, 8, 2, 256, 64, 300, 320),
    (5, 4, 2, 64, 16, 0, 8),
    (13, 8, 2, 256, 64, 0, 20),
    (33, 6, 1, 128, 32, 40, 80),
    (2, 4, 2, 64, 16, 0, 512),
    // two query blocks of the widest prefill tile over many key blocks, cached and new
    (70, 4, 2, 64, 16, 30, 110),
];

#[allow(clippy::too_many_arguments)]
pub fn gated_attention_case(
    x: DType,
    w: DType,
    out: DType,
    cache: DType,
    shape: (usize, usize, usize, usize, usize, usize, usize),
) -> Case {
    let (t, hq, hkv, dh, rot, n_past, cap) = shape;
    let mut tag = format!("{x}->{out}");
    if w != x {
        tag += &format!(",w{w}");
    }
    if cache != DType::F32 {
        tag += &format!(",kv{cache}");
    }
    tag += &format!(",past{n_past},Hkv{hkv},rot{rot}");
    let s = seed(&format!("gattn{tag}{t}{hq}{dh}"));
    let mut r = Rng::new(s ^ 11);
    let mut norm_w = || -> Vec<f32> { (0..dh).map(|_| (0.1 * r.normal()) as f32).collect() };
    let (qn, kn) = (norm_w(), norm_w());
    let (cos, sin) = rope_tables(1e7, rot, 512);
    // cache rows below n_past hold earlier keys/values; every row from n_past on starts as NaN, so
    // a row the op fails to write, or a read past n_past + T, goes red
    let valid = n_past * hkv * dh;
    Case::new(
        "gated_attention",
        &tag,
        Op::GatedAttention {
            n_past,
            scale: 1.0 / (dh as f32).sqrt(),
            eps: 1e-6,
            rotary_dim: rot,
        },
        vec![
            input(x, &[t, hq, 2 * dh], normal(s, 1.0)),
            input(x, &[t, hkv, dh], normal(s + 1, 1.0)),
            input(x, &[t, hkv, dh], normal(s + 2, 1.0)),
            input(w, &[dh], Init::Values(qn)),
            input(w, &[dh], Init::Values(kn)),
            input(DType::F32, &[512, rot / 2], Init::Values(cos)),
            input(DType::F32, &[512, rot / 2], Init::Values(sin)),
        ],
        vec![
            TensorDesc::new(out, &[t, hq, dh]),
            TensorDesc::new(cache, &[cap, hkv, dh]),
            TensorDesc::new(cache, &[cap, hkv, dh]),
        ],
    )
    .with_out_init(
        1,
        Init::NormalNanTail {
            seed: s + 3,
            std: 1.0,
            valid,
        },
    )
    .with_out_init(
        2,
        Init::NormalNanTail {
            seed: s + 4,
            std: 1.0,
            valid,
        },
    )
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // every (input, output) dtype pair, bf16 -> f32 included, with an f32 cache
    for x in FLOATS {
        for out in FLOATS {
            for shape in ATTN_SHAPES {
                v.push(gated_attention_case(x, x, out, DType::F32, shape));
            }
        }
    }
    // the engine's mix (f32 activations, bf16 / f16 norm weights, f32 cache and output), and
    // 16-bit caches (rounding of the new rows is part of the contract)
    for shape in ATTN_SHAPES {
        for w in [DType::BF16, DType::F16] {
            v.push(gated_attention_case(DType::F32, w, DType::F32, DType::F32, shape));
        }
        for d in [DType::BF16, DType::F16] {
            v.push(gated_attention_case(d, d, d, d, shape));
        }
    }
    v
}
