//! penalties: per-row repetition / presence / frequency penalties over logits rows. Rows differ in
//! their parameters (the off values among them), logits hold positives, negatives, +0, -0 and
//! -inf (and +inf in the edge case), counts hold unseen, prompt-only, output-only and
//! prompt-and-output tokens. Exact: the kernel makes the reference's f32 operations.
use super::{seed, DType};
use crate::op::{Op, TensorDesc, PROMPT_SEEN};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

/// (rows, vocabulary): a vocabulary not a multiple of the workgroup (257, 4097) and Qwen's 151936.
const SHAPES: [(usize, usize); 5] = [(1, 5), (3, 257), (7, 1000), (4, 4097), (2, 151936)];

/// (rep, presence, frequency) per row, cycled: off, each penalty alone, all at once, a repetition
/// penalty below 1 (a boost), the range ends.
const ROWS: [(f32, f32, f32); 7] = [
    (1.0, 0.0, 0.0),
    (1.3, 0.0, 0.0),
    (1.0, 0.5, 0.0),
    (1.0, 0.0, -0.7),
    (1.1, 1.5, 0.35),
    (0.8, -2.0, 2.0),
    (1.0, 0.0, 0.0),
];

/// The params row the contract wants: (rep, rep_inv, presence, frequency).
fn params(r: usize) -> Vec<f32> {
    (0..r)
        .flat_map(|k| {
            let (rep, pres, freq) = ROWS[k % ROWS.len()];
            [rep, 1.0 / rep, pres, freq]
        })
        .collect()
}

/// Logits N(0, 3^2) with planted +0, -0, -inf and, with `inf`, +inf.
fn logits(n: usize, s: u64, inf: bool) -> Vec<f32> {
    let mut rng = Rng::new(s);
    (0..n)
        .map(|_| match rng.next_u64() % 40 {
            0 => 0.0,
            1 => -0.0,
            2 => f32::NEG_INFINITY,
            3 if inf => f32::INFINITY,
            _ => (rng.normal() * 3.0) as f32,
        })
        .collect()
}

/// Half the tokens unseen; the rest prompt-only, output-only (1..=5 times) or both.
fn counts(n: usize, s: u64) -> Vec<u32> {
    let mut rng = Rng::new(s);
    (0..n)
        .map(|_| {
            let times = 1 + (rng.next_u64() % 5) as u32;
            match rng.next_u64() % 8 {
                0..=3 => 0,
                4 => PROMPT_SEEN,
                5 | 6 => times,
                _ => PROMPT_SEEN | times,
            }
        })
        .collect()
}

fn case(tag: &str, r: usize, v: usize, inf: bool) -> Case {
    let s = seed(&format!("penalties{tag}{r}x{v}"));
    Case::new(
        "penalties",
        tag,
        Op::Penalties,
        vec![
            input(DType::F32, &[r, v], Init::Values(logits(r * v, s, inf))),
            input(DType::U32, &[r, v], Init::U32s(counts(r * v, s + 1))),
            input(DType::F32, &[r, 4], Init::Values(params(r))),
        ],
        vec![TensorDesc::new(DType::F32, &[r, v])],
    )
}

pub fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = SHAPES.iter().map(|&(r, n)| case("f32", r, n, false)).collect();
    v.push(case("edges", 7, 33, true));
    v
}
