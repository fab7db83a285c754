use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

const SHAPES: [&[usize]; 5] = [&[1, 13], &[5, 7], &[3, 4097], &[2, 32000], &[1, 151936]];

/// Logit-like rows with planted ties: the maximum appears twice in each row.
fn tied_rows(shape: &[usize], s: u64) -> Vec<f32> {
    let (r, c) = (shape[0], shape[1]);
    let mut rng = Rng::new(s);
    let mut v: Vec<f32> = (0..r * c).map(|_| (rng.normal() * 3.0) as f32).collect();
    for i in 0..r {
        let a = (rng.next_u64() % c as u64) as usize;
        let b = (rng.next_u64() % c as u64) as usize;
        v[i * c + a] = 20.0;
        v[i * c + b] = 20.0;
    }
    v
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for dt in FLOATS {
        for shape in SHAPES {
            let s = seed(&format!("red{dt}{shape:?}"));
            v.push(Case::new(
                "softmax",
                dt.name(),
                Op::Softmax,
                vec![input(dt, shape, Init::Normal { seed: s, std: 3.0 })],
                vec![TensorDesc::new(dt, shape)],
            ));
            v.push(Case::new(
                "argmax",
                dt.name(),
                Op::Argmax,
                vec![input(dt, shape, Init::Values(tied_rows(shape, s)))],
                vec![TensorDesc::new(DType::U32, &[shape[0]])],
            ));
            for k in [1usize, 5, 20, 40] {
                if k > shape[1] {
                    continue;
                }
                v.push(Case::new(
                    "topk",
                    &format!("{dt},k{k}"),
                    Op::TopK { k },
                    vec![input(dt, shape, Init::Values(tied_rows(shape, s ^ k as u64)))],
                    vec![
                        TensorDesc::new(dt, &[shape[0], k]),
                        TensorDesc::new(DType::U32, &[shape[0], k]),
                    ],
                ));
            }
        }
    }
    v
}
