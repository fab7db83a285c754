//! Qwen3.5's ops: causal conv1d (+ its decode update), the gated delta rule (recurrent and
//! chunked), gated RMSNorm, and the fused gated full attention. The CPU reference of `gdn_chunked`
//! is the recurrence, so every gdn_chunked case is a chunked-vs-recurrent check (lengths 1, 63, 64,
//! 65, 150 cross the chunk boundary of 64); gated_attention's reference is the composition of the
//! unfused reference ops, for every (input, output) dtype pair.
use super::{seed, DType, FLOATS};
use crate::op::{rope_tables, Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

fn normal(s: u64, std: f32) -> Init {
    Init::Normal { seed: s, std }
}

pub fn conv_cases() -> Vec<Case> {
    let mut v = Vec::new();
    // (T, C, K): the tiny model's conv (256 channels), the 0.8B's (6144), odd sizes, K 2 and 3
    let shapes = [
        (1, 13, 4),
        (5, 7, 4),
        (64, 256, 4),
        (150, 24, 4),
        (7, 6144, 4),
        (9, 11, 3),
        (4, 5, 2),
        (2, 3, 4),
    ];
    // (x/y dtype, w dtype, state dtype): same dtype throughout, and the engine's f32 activations
    // and state with 16-bit weights
    let mut kinds: Vec<(DType, DType, DType)> = FLOATS.iter().map(|&d| (d, d, d)).collect();
    kinds.extend([
        (DType::F32, DType::BF16, DType::F32),
        (DType::F32, DType::F16, DType::F32),
    ]);
    for (xd, wd, sd) in kinds {
        let tag = if xd == wd && wd == sd {
            xd.name().to_string()
        } else {
            format!("{xd}-w{wd}-s{sd}")
        };
        for (t, c, k) in shapes {
            for update in [false, true] {
                if update && t != 1 && (t, c) != (5, 7) {
                    continue;
                }
                let t = if update { 1 } else { t };
                let (family, op) = if update {
                    ("causal_conv1d_update", Op::CausalConv1dUpdate)
                } else {
                    ("causal_conv1d", Op::CausalConv1d)
                };
                let s = seed(&format!("{family}{tag}{t}{c}{k}"));
                v.push(Case::new(
                    family,
                    &format!("{tag},K{k}"),
                    op,
                    vec![
                        input(xd, &[t, c], normal(s, 1.0)),
                        input(wd, &[c, k], normal(s + 1, 0.5)),
                        input(sd, &[k - 1, c], normal(s + 2, 1.0)),
                    ],
                    vec![TensorDesc::new(xd, &[t, c]), TensorDesc::new(sd, &[k - 1, c])],
                ));
            }
        }
    }
    v
}

/// One gated-delta-rule case: gates as a trained model has them (A_log = log U(1, 16), dt_bias so
/// that softplus(dt_bias) = U(0.001, 0.1)), q/k/v like SiLU'd conv outputs.
#[allow(clippy::too_many_arguments)]
fn gdn_case(
    family: &'static str,
    op: Op,
    x: DType,
    w: DType,
    t: usize,
    nk: usize,
    nv: usize,
    dk: usize,
    dv: usize,
    zero_state: bool,
) -> Case {
    let tag = format!(
        "{}{},nk{nk}nv{nv}dk{dk}dv{dv}{}",
        x.name(),
        if w != x { format!("-w{w}") } else { String::new() },
        if zero_state { ",s0" } else { "" }
    );
    let s = seed(&format!("{family}{tag}{t}"));
    let mut r = Rng::new(s ^ 5);
    let a_log: Vec<f32> = (0..nv).map(|_| (1.0 + 15.0 * r.uniform()).ln() as f32).collect();
    let dt_bias: Vec<f32> = (0..nv)
        .map(|_| (0.001f64 + 0.099 * r.uniform()).exp_m1().ln() as f32)
        .collect();
    let c = 2 * nk * dk + nv * dv;
    let state = if zero_state {
        Init::Values(vec![0.0; nv * dk * dv])
    } else {
        normal(s + 3, 0.2)
    };
    Case::new(
        family,
        &tag,
        op,
        vec![
            input(x, &[t, c], normal(s, 1.0)),
            input(x, &[t, nv], normal(s + 1, 1.5)),
            input(x, &[t, nv], normal(s + 2, 1.5)),
            input(w, &[nv], Init::Values(a_log)),
            input(w, &[nv], Init::Values(dt_bias)),
            input(DType::F32, &[nv, dk, dv], state),
        ],
        vec![
            TensorDesc::new(x, &[t, nv, dv]),
            TensorDesc::new(DType::F32, &[nv, dk, dv]),
        ],
    )
}

pub fn gdn_cases() -> Vec<Case> {
    let mut v = Vec::new();
    // (nk, nv, dk, dv): the tiny model's heads; r = 3 with dk != dv; odd sizes; the 0.8B's heads
    let heads = [(2, 4, 32, 32), (2, 6, 16, 24), (1, 1, 5, 7), (16, 16, 128, 128)];
    let kinds = [
        (DType::F32, DType::F32),
        (DType::F32, DType::BF16),
        (DType::BF16, DType::BF16),
        (DType::F16, DType::F16),
    ];
    for (x, w) in kinds {
        for (nk, nv, dk, dv) in heads {
            let big = dk == 128;
            // the decode step, and a few tokens through the same recurrent kernel
            for t in [1usize, 5] {
                if big && (t != 1 || x != DType::F32) {
                    continue;
                }
                v.push(gdn_case(
                    "gdn_recurrent",
                    Op::GdnRecurrent,
                    x,
                    w,
                    t,
                    nk,
                    nv,
                    dk,
                    dv,
                    false,
                ));
            }
            // chunked vs the recurrent reference across the chunk boundary
            for t in [1usize, 63, 64, 65, 150] {
                if big && (t == 150 || x != DType::F32) {
                    continue;
                }
                v.push(gdn_case("gdn_chunked", Op::GdnChunked, x, w, t, nk, nv, dk, dv, false));
            }
        }
    }
    // a fresh sequence (zero state), prefill and decode
    v.push(gdn_case(
        "gdn_chunked",
        Op::GdnChunked,
        DType::F32,
        DType::BF16,
        100,
        2,
        4,
        32,
        32,
        true,
    ));
    v.push(gdn_case(
        "gdn_recurrent",
        Op::GdnRecurrent,
        DType::F32,
        DType::BF16,
        1,
        2,
        4,
        32,
        32,
        true,
    ));
    v
}

pub fn gated_norm_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut kinds: Vec<(DType, DType, DType)> = FLOATS.iter().map(|&d| (d, d, d)).collect();
    kinds.extend([
        (DType::F32, DType::BF16, DType::F32),
        (DType::F32, DType::F32, DType::BF16),
    ]);
    for (x, w, y) in kinds {
        let tag = format!(
            "{x}{}{}",
            if w != x { format!("-w{w}") } else { String::new() },
            if y != x { format!("-y{y}") } else { String::new() }
        );
        for shape in [
            &[5usize, 4, 32][..],
            &[1, 16, 128],
            &[7, 3, 13],
            &[65, 16, 128],
            &[2, 1, 4097],
        ] {
            let d = shape[2];
            let s = seed(&format!("gn{tag}{shape:?}"));
            let mut r = Rng::new(s ^ 9);
            let wv: Vec<f32> = (0..d).map(|_| (1.0 + 0.1 * r.normal()) as f32).collect();
            v.push(Case::new(
                "rms_norm_gated",
                &tag,
                Op::RmsNormGated { eps: 1e-6 },
                vec![
                    input(x, shape, normal(s, 1.5)),
                    input(x, shape, normal(s + 1, 2.0)),
                    input(w, &[d], Init::Values(wv)),
                ],
                vec![TensorDesc::new(y, shape)],
            ));
        }
    }
    v
}

/// Gated attention (T, Hq, Hkv, Dh, rotary, n_past, cache rows): the tiny model's decode and
/// prefill, the 0.8B's heads (8 q, 2 kv, head_dim 256, rotary 64), an odd T, a continuation.
const ATTN_SHAPES: [(usize, usize, usize, usize, usize, usize, usize); 6] = [
    (1, 4, 2, 64, 16, 7, 16),
    (1, 8, 2, 256, 64, 300, 320),
    (5, 4, 2, 64, 16, 0, 8),
    (13, 8, 2, 256, 64, 0, 20),
    (33, 6, 1, 128, 32, 40, 80),
    (2, 4, 2, 64, 16, 0, 512),
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

pub fn gated_attention_cases() -> Vec<Case> {
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
