use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

/// (M, K, N): decode matvecs (M = 1) and prefill GEMMs, odd sizes included.
const SHAPES: [(usize, usize, usize); 11] = [
    (1, 7, 5),
    (1, 64, 32),
    (1, 4097, 13),
    (1, 1024, 3072),
    (2, 128, 11),
    (5, 64, 11),
    (7, 4097, 13),
    (33, 256, 130),
    (128, 1024, 256),
    (2, 128, 256),
    // GEMM path (M > 64) with odd K and N: the K tail and the N edge
    (130, 4097, 67),
];

fn one(x: DType, w: DType, y: DType, (m, k, n): (usize, usize, usize)) -> Case {
    let tag = if x == w && w == y {
        x.name().to_string()
    } else {
        format!("x{x}-w{w}-y{y}")
    };
    let s = seed(&format!("lin{tag}{m}{k}{n}"));
    Case::new(
        "linear",
        &format!("{tag},N{n}"),
        Op::Linear,
        vec![
            input(x, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            input(
                w,
                &[n, k],
                Init::Normal {
                    seed: s ^ 7,
                    std: 1.0 / (k as f32).sqrt(),
                },
            ),
        ],
        vec![TensorDesc::new(y, &[m, n])],
    )
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for shape in SHAPES {
        for dt in FLOATS {
            v.push(one(dt, dt, dt, shape));
            if dt != DType::F32 {
                // the model's layout: f32 activations, 16-bit weights
                v.push(one(DType::F32, dt, DType::F32, shape));
            }
        }
    }
    v
}
