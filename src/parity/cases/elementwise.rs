use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

const SIZES: [&[usize]; 5] = [&[5], &[7], &[4097], &[13, 11], &[3, 1000]];

/// Values that stress conversions: halfway points, f16 overflow and subnormals, signed zero, inf, NaN.
fn special() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65520.0,
        65519.0,
        -70000.0,
        1e-8,
        -3e-7,
        6.1e-5,
        5.96e-8,
        2.98e-8,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.00390625,
        1.01171875,
        3.4e38,
        -1.17e-38,
        1.0009766,
        0.33333334,
    ];
    // bf16 halfway cases: mantissa low half exactly 0x8000, odd and even upper halves
    v.push(f32::from_bits(0x3f80_8000));
    v.push(f32::from_bits(0x3f81_8000));
    v.push(f32::from_bits(0x3f80_8001));
    // f16 halfway cases: low 13 bits exactly 0x1000
    v.push(f32::from_bits(0x3f80_1000));
    v.push(f32::from_bits(0x3f80_3000));
    v
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for dt in FLOATS {
        for shape in SIZES {
            let s = seed(&format!("ew{dt}{shape:?}"));
            for (fam, op) in [("swiglu", Op::SwiGlu), ("add", Op::Add)] {
                v.push(Case::new(
                    fam,
                    dt.name(),
                    op,
                    vec![
                        input(dt, shape, Init::Normal { seed: s, std: 2.0 }),
                        input(dt, shape, Init::Normal { seed: s + 1, std: 1.0 }),
                    ],
                    vec![TensorDesc::new(dt, shape)],
                ));
            }
        }
        // swiglu over interleaved (gate, up) pairs, as a fused gate/up projection writes them
        for (x, y) in [
            (&[5usize, 14][..], &[5usize, 7][..]),
            (&[1, 6144][..], &[1, 3072][..]),
            (&[3, 2 * 4097][..], &[3, 4097][..]),
        ] {
            let s = seed(&format!("swp{dt}{x:?}"));
            v.push(Case::new(
                "swiglu",
                &format!("{dt},pairs"),
                Op::SwiGlu,
                vec![input(dt, x, Init::Normal { seed: s, std: 2.0 })],
                vec![TensorDesc::new(dt, y)],
            ));
        }
        // f32 residual stream plus a 16-bit branch, written back in f32
        if dt != DType::F32 {
            v.push(Case::new(
                "add",
                &format!("f32+{dt}"),
                Op::Add,
                vec![
                    input(DType::F32, &[3, 1000], Init::Normal { seed: 7, std: 1.0 }),
                    input(dt, &[3, 1000], Init::Normal { seed: 8, std: 1.0 }),
                ],
                vec![TensorDesc::new(DType::F32, &[3, 1000])],
            ));
        }
    }
    for dt in DType::ALL {
        for shape in SIZES {
            let init = if dt.is_float() {
                Init::Normal {
                    seed: seed(&format!("copy{dt}{shape:?}")),
                    std: 1.0,
                }
            } else {
                Init::Ids { seed: 3, max: u32::MAX }
            };
            v.push(Case::new(
                "copy",
                dt.name(),
                Op::Copy,
                vec![input(dt, shape, init)],
                vec![TensorDesc::new(dt, shape)],
            ));
        }
        // copy with a reshape (a KV-cache slot write is a copy into a view)
        v.push(Case::new(
            "copy",
            &format!("{dt},reshape"),
            Op::Copy,
            vec![input(dt, &[5, 2, 7], Init::Ids { seed: 4, max: 1000 })],
            vec![TensorDesc::new(dt, &[70])],
        ));
    }
    for from in FLOATS {
        for to in FLOATS {
            let sp = special();
            let n = sp.len();
            v.push(Case::new(
                "cast",
                &format!("{from}->{to},special"),
                Op::Cast,
                vec![input(from, &[n], Init::Values(sp))],
                vec![TensorDesc::new(to, &[n])],
            ));
            for shape in [&[7usize][..], &[4097]] {
                let s = seed(&format!("cast{from}{to}{shape:?}"));
                v.push(Case::new(
                    "cast",
                    &format!("{from}->{to}"),
                    Op::Cast,
                    vec![input(from, shape, Init::Normal { seed: s, std: 100.0 })],
                    vec![TensorDesc::new(to, shape)],
                ));
            }
        }
    }
    v
}
