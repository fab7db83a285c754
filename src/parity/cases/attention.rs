use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

/// (T, Hq, Hkv, Dh, n_past, capacity): prefill (T > 1) and decode (T = 1), GQA ratios 1, 2, 4, 6.
const SHAPES: [(usize, usize, usize, usize, usize, usize); 19] = [
    (1, 4, 4, 64, 0, 4),
    (1, 8, 2, 128, 36, 64),
    (1, 16, 8, 128, 299, 320),
    (1, 6, 1, 256, 12, 20),
    (1, 8, 2, 64, 1000, 1030),
    (5, 4, 4, 64, 0, 8),
    (13, 8, 2, 128, 7, 32),
    (7, 6, 1, 256, 0, 7),
    (64, 16, 8, 128, 0, 70),
    (33, 4, 2, 64, 100, 140),
    // the tiny Qwen3's prefill: 2 tokens into a 512-row cache
    (2, 4, 2, 64, 0, 512),
    // several query blocks of every prefill tile, each over many key blocks, the last block part
    // full; head_dim 20 leaves output columns past the row (threads' vec4 columns clamped)
    (150, 8, 2, 128, 37, 200),
    (200, 4, 2, 64, 20, 230),
    (19, 4, 1, 20, 5, 30),
    // enough query blocks x heads (320) for the 64-row tile (attention.rs FILL_WORKGROUPS)
    (264, 64, 16, 64, 3, 270),
    // enough query blocks x head pairs (256) for the tile of two heads a workgroup (attention.rs
    // PAIR_TILE, where the device runs the split score)
    (450, 64, 32, 64, 5, 460),
    // past 512 keys in all, a prefill's keys in partitions merged after (attention_parts.rs):
    // two, a query block across their boundary; three after a long cache, rows before the last
    // partition's first key (wholly masked there, not merged); head_dim 20 and a group of 6
    (600, 4, 2, 64, 0, 610),
    (100, 8, 2, 128, 1000, 1110),
    (530, 6, 1, 20, 3, 540),
];

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for dt in FLOATS {
        for (t, hq, hkv, dh, n_past, cap) in SHAPES {
            let kinds = if dt == DType::F32 {
                vec![(dt, dt)]
            } else {
                vec![(dt, dt), (DType::F32, dt)]
            };
            for (qdt, kvdt) in kinds {
                let tag = if qdt == kvdt {
                    format!("{dt},past{n_past}")
                } else {
                    format!("q{qdt}-kv{kvdt},past{n_past}")
                };
                let s = seed(&format!("attn{tag}{t}{hq}{hkv}{dh}"));
                let valid = (n_past + t) * hkv * dh;
                v.push(Case::new(
                    "attention",
                    &format!("{tag},Hkv{hkv}"),
                    Op::Attention {
                        n_past,
                        scale: 1.0 / (dh as f32).sqrt(),
                    },
                    vec![
                        input(qdt, &[t, hq, dh], Init::Normal { seed: s, std: 1.0 }),
                        // rows past n_past + T hold NaN: a kernel that reads them goes red
                        input(
                            kvdt,
                            &[cap, hkv, dh],
                            Init::NormalNanTail {
                                seed: s + 1,
                                std: 1.0,
                                valid,
                            },
                        ),
                        input(
                            kvdt,
                            &[cap, hkv, dh],
                            Init::NormalNanTail {
                                seed: s + 2,
                                std: 1.0,
                                valid,
                            },
                        ),
                    ],
                    vec![TensorDesc::new(qdt, &[t, hq, dh])],
                ));
            }
        }
    }
    v
}
