//! rms_norm_rope_kv_attention: a lone decode step's attention straight from the stacked q/k/v
//! projection (q/k norm, RoPE, the new key and value into the pools, paged attention over them),
//! against the CPU's composition rms_norm_rope_kv -> paged_attention. The pools hold the cached
//! rows below the new position and NaN at the new key's row and past it: a kernel that attends the
//! pool's row before it is written, or never writes it, goes red. Every KV dtype.
use super::paged_attention::PagedLayout;
use super::{seed, DType, FLOATS};
use crate::op::{rope_tables, Op, TensorDesc, SEQ_FIELDS};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // (Hq, Hkv, Dh, kv length, rotary dims, a weight row a head): Qwen3-0.6B's heads over four
    // 32-key partitions and over one; many partitions; rotary dims short of Dh; a group of 8 at
    // head_dim 256
    for (hq, hkv, dh, kv_len, rot, per_head) in [
        (16, 8, 128, 100, 128, true),
        (16, 8, 128, 20, 128, true),
        (8, 2, 128, 300, 128, false),
        (4, 2, 64, 33, 32, false),
        (8, 1, 256, 70, 64, true),
    ] {
        for kv in FLOATS {
            v.push(case(hq, hkv, dh, kv_len, rot, per_head, kv));
        }
    }
    v
}

fn case(hq: usize, hkv: usize, dh: usize, kv_len: usize, rot: usize, per_head: bool, kv: DType) -> Case {
    let bs = 16;
    let tag0 = format!(
        "Hq{hq},Hkv{hkv},dh{dh},rot{rot}{}",
        if per_head { ",w-per-head" } else { "" }
    );
    let s = seed(&format!("nrkva{tag0}{kv_len}"));
    let l = PagedLayout::new(bs, &[(1, kv_len)], false, 2, s);
    let tag = format!("kv{kv},{tag0},1/{kv_len}");
    let mut r = Rng::new(s ^ 5);
    let wn = if per_head { (hq + hkv) * dh } else { dh };
    let w: Vec<f32> = (0..wn).map(|_| (1.0 + 0.3 * r.normal()) as f32).collect();
    let wshape = if per_head { vec![hq + hkv, dh] } else { vec![dh] };
    let pos = (kv_len - 1) as u32;
    let (cos, sin) = rope_tables(1e6, rot, l.mb * bs);
    let pool_shape = [l.nb, bs, hkv, dh];
    let cached = |_: usize| kv_len - 1;
    Case::new(
        "rms_norm_rope_kv_attention",
        &tag,
        Op::RmsNormRopeKvAttention {
            eps: 1e-6,
            rotary_dim: rot,
            scale: 1.0 / (dh as f32).sqrt(),
            block_size: bs,
        },
        vec![
            input(DType::F32, &[1, hq + 2 * hkv, dh], Init::Normal { seed: s, std: 2.0 }),
            input(DType::BF16, &wshape, Init::Values(w)),
            input(DType::U32, &[1], Init::U32s(vec![pos])),
            input(DType::F32, &[l.mb * bs, rot / 2], Init::Values(cos)),
            input(DType::F32, &[l.mb * bs, rot / 2], Init::Values(sin)),
            input(DType::U32, &[1], Init::U32s(vec![l.slot(0, kv_len - 1) as u32])),
            input(DType::U32, &[1, l.mb], Init::U32s(l.tables.clone())),
            input(DType::U32, &[1, SEQ_FIELDS], Init::U32s(l.seq_words())),
        ],
        vec![
            TensorDesc::new(DType::F32, &[1, hq, dh]),
            TensorDesc::new(kv, &pool_shape),
            TensorDesc::new(kv, &pool_shape),
        ],
    )
    .with_out_init(1, Init::Values(l.pool(hkv * dh, s + 2, cached)))
    .with_out_init(2, Init::Values(l.pool(hkv * dh, s + 3, cached)))
}
