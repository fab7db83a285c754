//! layer_bridge: a lone decode step from one layer's attention output to the next layer's q/k/v
//! projection. Qwen3-0.6B's shape (A 2048, D 1024, F 3072, N 4096), a smaller one with an N that
//! leaves the last workgroup's rows short, and one whose rows are 8 words (a CPU adapter's
//! subgroups of 8; refused where subgroups are wider); both 16-bit weight dtypes, the norm weights
//! f32 (plain) or bf16 (1 + w).
use super::{seed, DType};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (a, d, f, n) in [(2048, 1024, 3072, 4096), (512, 256, 512, 520), (128, 64, 128, 160)] {
        for w in [DType::BF16, DType::F16] {
            for (nw, unit) in [(DType::F32, false), (DType::BF16, true)] {
                let tag = format!("w{w}-nw{nw}{},A{a}D{d}F{f}N{n}", if unit { "+1" } else { "" });
                let s = seed(&format!("bridge{tag}"));
                let normal = |k: u64, std: f32| Init::Normal { seed: s + k, std };
                let wt = |k: u64, cols: usize| normal(k, 1.0 / (cols as f32).sqrt());
                v.push(Case::new(
                    "layer_bridge",
                    &tag,
                    Op::LayerBridge {
                        eps: 1e-6,
                        unit_offset: unit,
                    },
                    vec![
                        input(DType::F32, &[1, a], normal(0, 1.0)),
                        input(DType::F32, &[1, d], normal(1, 1.0)),
                        input(w, &[d, a], wt(2, a)),
                        input(nw, &[d], normal(3, 0.3)),
                        input(w, &[2 * f, d], wt(4, d)),
                        input(w, &[d, f], wt(5, f)),
                        input(nw, &[d], normal(6, 0.3)),
                        input(w, &[n, d], wt(7, d)),
                    ],
                    vec![
                        TensorDesc::new(DType::F32, &[1, d]),
                        TensorDesc::new(DType::F32, &[1, n]),
                    ],
                ));
            }
        }
    }
    v
}
