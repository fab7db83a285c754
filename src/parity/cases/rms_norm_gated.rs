//! rms_norm_gated, Qwen3.5's linear-attention output norm (y = rms_norm(x) * w * silu(z)): every
//! float dtype, and the engine's mixes (f32 x with bf16 weights, f32 x into bf16 y).
use super::{normal, seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

pub fn cases() -> Vec<Case> {
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
