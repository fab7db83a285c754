use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

fn one(family: &'static str, x: DType, w: DType, y: DType, shape: &[usize], eps: f32, unit: bool) -> Case {
    let d = *shape.last().unwrap();
    let tag = format!("{x}{}{}{},eps{eps:e}{}", if w != x { format!("-w{w}") } else { String::new() }, if y != x { format!("-y{y}") } else { String::new() }, "", if unit { ",1+w" } else { "" });
    let s = seed(&format!("{family}{tag}{shape:?}"));
    // Norm weights sit near 1 (or near 0 for the 1+w form), as in trained models.
    let wvals: Vec<f32> = {
        let mut r = crate::parity::case::Rng::new(s ^ 1);
        (0..d).map(|_| (if unit { 0.0 } else { 1.0 } + 0.1 * r.normal()) as f32).collect()
    };
    Case::new(
        family,
        &tag,
        Op::RmsNorm { eps, unit_offset: unit },
        vec![input(x, shape, Init::Normal { seed: s, std: 1.5 }), input(w, &[d], Init::Values(wvals))],
        vec![TensorDesc::new(y, shape)],
    )
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for dt in FLOATS {
        for shape in [&[1usize, 13][..], &[5, 7], &[3, 4097], &[2, 1024], &[5, 7, 4097]] {
            v.push(one("rms_norm", dt, dt, dt, shape, 1e-6, false));
        }
        v.push(one("rms_norm", dt, dt, dt, &[4, 1024], 1e-6, true));
        v.push(one("rms_norm", dt, dt, dt, &[3, 11], 1e-1, false));
        // mixed: f32 activations with 16-bit weights, and the reverse output
        if dt != DType::F32 {
            v.push(one("rms_norm", DType::F32, dt, DType::F32, &[3, 1024], 1e-6, false));
            v.push(one("rms_norm", DType::F32, DType::F32, dt, &[3, 1024], 1e-6, false));
        }
        // per-head q/k norm: [T, H, Dh]
        for shape in [&[5usize, 16, 128][..], &[3, 8, 64], &[1, 2, 256], &[7, 3, 128]] {
            v.push(one("qk_norm", dt, dt, dt, shape, 1e-6, false));
        }
    }
    v
}
