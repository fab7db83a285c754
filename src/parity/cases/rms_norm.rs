use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

fn one(family: &'static str, x: DType, w: DType, y: DType, shape: &[usize], eps: f32, unit: bool) -> Case {
    let d = *shape.last().unwrap();
    let tag = format!(
        "{x}{}{}{},eps{eps:e}{}",
        if w != x { format!("-w{w}") } else { String::new() },
        if y != x { format!("-y{y}") } else { String::new() },
        "",
        if unit { ",1+w" } else { "" }
    );
    let s = seed(&format!("{family}{tag}{shape:?}"));
    // Norm weights sit near 1 (or near 0 for the 1+w form), as in trained models.
    let wvals: Vec<f32> = {
        let mut r = crate::util::Rng::new(s ^ 1);
        (0..d)
            .map(|_| (if unit { 0.0 } else { 1.0 } + 0.1 * r.normal()) as f32)
            .collect()
    };
    Case::new(
        family,
        &tag,
        Op::RmsNorm { eps, unit_offset: unit },
        vec![
            input(x, shape, Init::Normal { seed: s, std: 1.5 }),
            input(w, &[d], Init::Values(wvals)),
        ],
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

/// The fused q/k norm + RoPE, against the CPU's composition of rms_norm and rope.
pub fn norm_rope_cases() -> Vec<Case> {
    use crate::op::rope_tables;
    let mut v = Vec::new();
    // (T, H, Dh, rotary_dim, theta, positions)
    let shapes: [(usize, usize, usize, usize, f64, Vec<u32>); 5] = [
        (5, 4, 64, 64, 1e6, vec![0, 1, 2, 3, 4]),
        (1, 16, 128, 128, 1e6, vec![300]),
        (7, 8, 128, 128, 1e6, (40..47).collect()),
        (3, 2, 256, 64, 1e7, vec![5, 9, 511]),
        (2, 3, 6, 4, 500.0, vec![1, 2]),
    ];
    for dt in FLOATS {
        for (t, h, dh, rot, theta, pos) in shapes.iter().cloned() {
            let (cos, sin) = rope_tables(theta, rot, 512);
            let tag = format!("{dt},rot{rot}");
            let s = seed(&format!("nr{tag}{t}{h}{dh}"));
            let mut r = crate::util::Rng::new(s ^ 3);
            let w: Vec<f32> = (0..dh).map(|_| (1.0 + 0.1 * r.normal()) as f32).collect();
            let w = input(dt, &[dh], Init::Values(w));
            v.push(norm_rope_case(&tag, dt, [t, h, dh], s, w, pos, (cos, sin)));
        }
        // a weight row a head ([H, Dh]: a one-token step's q and k heads normed in one call, in
        // the model's layout with f32 activations too), over several tokens: the row's head is
        // its index mod H
        for (t, h, dh, rot, x) in [(1, 24, 128, 128, DType::F32), (3, 5, 64, 32, dt)] {
            let (cos, sin) = rope_tables(1e6, rot, 512);
            let tag = format!("x{x}-w{dt},rot{rot},w-per-head");
            let s = seed(&format!("nrh{tag}{t}{h}{dh}"));
            let mut r = crate::util::Rng::new(s ^ 3);
            let w: Vec<f32> = (0..h * dh).map(|_| (1.0 + 0.3 * r.normal()) as f32).collect();
            let (w, pos) = (input(dt, &[h, dh], Init::Values(w)), (7..7 + t as u32).collect());
            v.push(norm_rope_case(&tag, x, [t, h, dh], s, w, pos, (cos, sin)));
        }
    }
    v
}

/// One rms_norm_rope case: x [T, H, Dh] in `x` (normal, seeded by `s`) and y alike, the weight
/// input `w`, the positions, and cos/sin tables of 512 positions (their width is the rotary half).
fn norm_rope_case(
    tag: &str,
    x: DType,
    [t, h, dh]: [usize; 3],
    s: u64,
    w: crate::parity::case::Input,
    pos: Vec<u32>,
    (cos, sin): (Vec<f32>, Vec<f32>),
) -> Case {
    let half = cos.len() / 512;
    Case::new(
        "rms_norm_rope",
        tag,
        Op::RmsNormRope {
            eps: 1e-6,
            rotary_dim: 2 * half,
        },
        vec![
            input(x, &[t, h, dh], Init::Normal { seed: s, std: 2.0 }),
            w,
            input(DType::U32, &[t], Init::U32s(pos)),
            input(DType::F32, &[512, half], Init::Values(cos)),
            input(DType::F32, &[512, half], Init::Values(sin)),
        ],
        vec![TensorDesc::new(x, &[t, h, dh])],
    )
}

/// The fused residual add + RMSNorm, against the CPU's composition add -> rms_norm.
pub fn add_norm_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for dt in FLOATS {
        for (shape, unit) in [
            (&[1usize, 1024][..], false),
            (&[5, 7][..], false),
            (&[3, 4097][..], false),
            (&[4, 128][..], true),
        ] {
            let d = *shape.last().unwrap();
            // the model's layout: f32 residual stream, 16-bit weights; plus all-same-dtype
            for (act, w) in [(DType::F32, dt), (dt, dt)] {
                if act == DType::F32 && dt == DType::F32 && w != dt {
                    continue;
                }
                let tag = if act == w {
                    format!("{dt}{}", if unit { ",1+w" } else { "" })
                } else {
                    format!("x{act}-w{w}{}", if unit { ",1+w" } else { "" })
                };
                if v.iter()
                    .any(|c: &Case| c.id == format!("add_rms_norm[{tag},{}]", crate::tensor::shape_str(shape)))
                {
                    continue;
                }
                let s = seed(&format!("addnorm{tag}{shape:?}"));
                let mut r = crate::util::Rng::new(s ^ 5);
                let wv: Vec<f32> = (0..d)
                    .map(|_| (if unit { 0.0 } else { 1.0 } + 0.1 * r.normal()) as f32)
                    .collect();
                v.push(Case::new(
                    "add_rms_norm",
                    &tag,
                    Op::AddRmsNorm {
                        eps: 1e-6,
                        unit_offset: unit,
                    },
                    vec![
                        input(act, shape, Init::Normal { seed: s, std: 1.0 }),
                        input(act, shape, Init::Normal { seed: s + 1, std: 0.5 }),
                        input(w, &[d], Init::Values(wv)),
                    ],
                    vec![TensorDesc::new(act, shape), TensorDesc::new(act, shape)],
                ));
            }
        }
    }
    v
}
