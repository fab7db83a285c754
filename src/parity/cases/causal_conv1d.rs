//! causal_conv1d over a prefill and causal_conv1d_update, its decode step (the conv state carried
//! between calls).
use super::{normal, seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case};

pub fn cases() -> Vec<Case> {
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
