//! rms_norm_rope_kv: a stacked q/k/v projection's tail (q and k heads normed and rotated, k and v
//! written to KV pools at scattered slots), against the CPU's composition rms_norm_rope -> kv_write.
//! Pools in every KV dtype, NaN in the blocks no slot touches, a shared and a per-head weight.
//! And linear_rms_norm_rope_kv: the stacked projection and that tail as one op, against linear ->
//! rms_norm_rope_kv.
use super::{seed, DType, FLOATS};
use crate::backend::BatchInvariance;
use crate::op::{rope_tables, Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for kv in FLOATS {
        // (T, Hq, Hkv, Dh, rotary dims, x dtype, a weight row a head): Qwen3-0.6B's decode step
        // first, then prefill chunks with odd counts
        for (t, hq, hkv, dh, rot, x, per_head) in [
            (1, 16, 8, 128, 128, DType::F32, true),
            (3, 4, 2, 64, 64, DType::F32, false),
            (5, 8, 1, 256, 64, DType::F32, true),
            (2, 6, 3, 64, 32, kv, false),
        ] {
            let tag = format!(
                "kv{kv},x{x},Hq{hq},Hkv{hkv},rot{rot}{}",
                if per_head { ",w-per-head" } else { "" }
            );
            let s = seed(&format!("nrkv{tag}{t}{dh}"));
            let mut r = Rng::new(s ^ 7);
            let wn = if per_head { (hq + hkv) * dh } else { dh };
            let w: Vec<f32> = (0..wn).map(|_| (1.0 + 0.3 * r.normal()) as f32).collect();
            let wshape = if per_head { vec![hq + hkv, dh] } else { vec![dh] };
            let (nb, bs) = (3, 16);
            let slots = scattered_slots(&mut r, nb * bs, t);
            let pos: Vec<u32> = (0..t as u32).map(|i| 5 + 37 * i).collect();
            let (cos, sin) = rope_tables(1e6, rot, 512);
            let old = |seed: u64| super::paged_attention::stale_pool(nb, bs * hkv * dh, seed);
            let pool = TensorDesc::new(kv, &[nb, bs, hkv, dh]);
            v.push(
                Case::new(
                    "rms_norm_rope_kv",
                    &tag,
                    Op::RmsNormRopeKv {
                        eps: 1e-6,
                        rotary_dim: rot,
                    },
                    vec![
                        input(x, &[t, hq + 2 * hkv, dh], Init::Normal { seed: s, std: 2.0 }),
                        input(if x == DType::F32 { DType::BF16 } else { x }, &wshape, Init::Values(w)),
                        input(DType::U32, &[t], Init::U32s(pos)),
                        input(DType::F32, &[512, rot / 2], Init::Values(cos)),
                        input(DType::F32, &[512, rot / 2], Init::Values(sin)),
                        input(DType::U32, &[t], Init::U32s(slots)),
                    ],
                    vec![TensorDesc::new(x, &[t, hq, dh]), pool.clone(), pool],
                )
                .with_out_init(1, old(s + 3))
                .with_out_init(2, old(s + 4)),
            );
        }
    }
    v
}

/// `t` distinct pool rows of `rows`, in a shuffled order.
fn scattered_slots(r: &mut Rng, rows: usize, t: usize) -> Vec<u32> {
    let mut all: Vec<u32> = (0..rows as u32).collect();
    for i in (1..all.len()).rev() {
        all.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
    }
    all[..t].to_vec()
}

/// linear_rms_norm_rope_kv under `BatchInvariance::ManyRows`, where the wgpu device has it (the
/// split-K tensor-core linear, its partials summed inside the tail): Qwen3-0.6B's q/k/v projection
/// at 1, 8 and 64 tokens, and a K that is no whole number of splits with head_dim 64; both 16-bit
/// weight dtypes, pools f16 and bf16.
pub fn linear_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (t, k, hq, hkv, dh) in [
        (1, 1024, 16, 8, 128),
        (8, 1024, 16, 8, 128),
        (64, 1024, 16, 8, 128),
        (3, 1000, 4, 2, 64),
    ] {
        for (w, kv) in [(DType::BF16, DType::F16), (DType::F16, DType::BF16)] {
            let tag = format!("w{w},kv{kv},Hq{hq},Hkv{hkv},Dh{dh}");
            let s = seed(&format!("linrkv{tag}"));
            let mut r = Rng::new(s ^ 7);
            let n = (hq + 2 * hkv) * dh;
            let (nb, bs) = (5, 16);
            let slots = scattered_slots(&mut r, nb * bs, t);
            let pos: Vec<u32> = (0..t as u32).map(|i| 3 + 7 * i).collect();
            let (cos, sin) = rope_tables(1e6, dh, 1024);
            let old = |seed: u64| super::paged_attention::stale_pool(nb, bs * hkv * dh, seed);
            let pool = TensorDesc::new(kv, &[nb, bs, hkv, dh]);
            let case = Case::new(
                "linear_rms_norm_rope_kv",
                &tag,
                Op::LinearRmsNormRopeKv {
                    eps: 1e-6,
                    rotary_dim: dh,
                },
                vec![
                    input(DType::F32, &[t, k], Init::Normal { seed: s, std: 1.0 }),
                    input(
                        w,
                        &[n, k],
                        Init::Normal {
                            seed: s ^ 5,
                            std: 1.0 / (k as f32).sqrt(),
                        },
                    ),
                    input(DType::BF16, &[dh], Init::Normal { seed: s + 1, std: 0.3 }),
                    input(DType::U32, &[t], Init::U32s(pos)),
                    input(DType::F32, &[1024, dh / 2], Init::Values(cos)),
                    input(DType::F32, &[1024, dh / 2], Init::Values(sin)),
                    input(DType::U32, &[t], Init::U32s(slots)),
                ],
                vec![TensorDesc::new(DType::F32, &[t, hq, dh]), pool.clone(), pool],
            )
            .with_out_init(1, old(s + 3))
            .with_out_init(2, old(s + 4));
            v.push(case.with_invariance(BatchInvariance::ManyRows));
        }
    }
    v
}
