//! min_p: per-row min-p over logits rows. Rows differ in their margin: +inf (min-p off: the row
//! copied, -inf and NaN included), 0 (min_p = 1: the maximum and its ties only), -T ln(min_p) for
//! a few (min_p, T), and rows with logits planted exactly at the threshold m - margin and one ulp
//! either side of it. Also a row of NaN and a row of -inf. Exact: one f32 subtraction and integer
//! comparisons in both.
use super::{seed, DType};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

const SHAPES: [(usize, usize); 5] = [(1, 5), (3, 257), (7, 1000), (4, 4097), (2, 151936)];

/// The margin of each row, cycled: off, min_p = 1, then -T ln(min_p) for (0.05, 0.7), (0.1, 1.0),
/// (0.5, 1.3), and a wide one (min_p = 1e-6 at T = 2).
fn margins() -> Vec<f32> {
    let m = |p: f64, t: f64| (-t * p.ln()) as f32;
    vec![f32::INFINITY, 0.0, m(0.05, 0.7), m(0.1, 1.0), m(0.5, 1.3), m(1e-6, 2.0)]
}

/// Logits N(0, 3^2) with -inf planted; in every row whose margin is finite, the maximum 20.0 twice
/// and values exactly at m - margin and one ulp above and below it.
fn logits(r: usize, v: usize, margin: &[f32], s: u64) -> Vec<f32> {
    let mut rng = Rng::new(s);
    let mut x: Vec<f32> = (0..r * v)
        .map(|_| match rng.next_u64() % 50 {
            0 => f32::NEG_INFINITY,
            1 => -0.0,
            _ => (rng.normal() * 3.0) as f32,
        })
        .collect();
    for (k, &m) in margin.iter().enumerate() {
        let row = &mut x[k * v..(k + 1) * v];
        let mut at = |val: f32| row[(rng.next_u64() % v as u64) as usize] = val;
        at(20.0);
        at(20.0);
        if m.is_finite() {
            let thr = 20.0f32 - m;
            // at the threshold and one ulp either side (the one above would be a new maximum
            // when the margin is 0)
            // (thr is never 0 here, so one more or one less in its bits is one ulp away)
            let (away, toward) = (f32::from_bits(thr.to_bits() + 1), f32::from_bits(thr.to_bits() - 1));
            let (above, below) = if thr > 0.0 { (away, toward) } else { (toward, away) };
            at(thr);
            at(below);
            if m > 0.0 {
                at(above);
            }
        } else {
            at(f32::NAN);
        }
    }
    x
}

fn case(tag: &str, r: usize, v: usize, x: Vec<f32>, margin: Vec<f32>) -> Case {
    Case::new(
        "min_p",
        tag,
        Op::MinP,
        vec![
            input(DType::F32, &[r, v], Init::Values(x)),
            input(DType::F32, &[r, 1], Init::Values(margin)),
        ],
        vec![TensorDesc::new(DType::F32, &[r, v])],
    )
}

pub fn cases() -> Vec<Case> {
    let all = margins();
    let mut v = Vec::new();
    for (r, n) in SHAPES {
        let margin: Vec<f32> = (0..r).map(|k| all[k % all.len()]).collect();
        let s = seed(&format!("min_p{r}x{n}"));
        v.push(case("f32", r, n, logits(r, n, &margin, s), margin));
    }
    // rows that hold no number (all NaN), only -inf, and a +inf (the threshold +inf), each with a
    // finite margin; then the same rows with min-p off
    let n = 9;
    let mut x = vec![f32::NAN; n];
    x.extend(vec![f32::NEG_INFINITY; n]);
    x.extend((0..n).map(|j| if j == 4 { f32::INFINITY } else { j as f32 }));
    x.extend((0..n).map(|j| if j == 2 { f32::NAN } else { -(j as f32) }));
    let edges = x.repeat(2);
    let mut margin = vec![1.0f32; 4];
    margin.extend([f32::INFINITY; 4]);
    v.push(case("edges", 8, n, edges, margin));
    v
}

#[cfg(test)]
mod tests {
    use crate::parity::case::Init;

    /// The ties are really there: in every row with a finite margin the maximum is the planted 20,
    /// a value sits exactly at the threshold (kept by the reference) and one an ulp below (dropped).
    #[test]
    fn rows_hold_values_at_the_threshold() {
        for c in super::cases().iter().filter(|c| c.id.starts_with("min_p[f32")) {
            let (Init::Values(x), Init::Values(m)) = (&c.inputs[0].init, &c.inputs[1].init) else {
                panic!("{}: explicit values expected", c.id)
            };
            let v = c.inputs[0].desc.shape[1];
            let out = crate::backend::cpu::min_p(x, m, v);
            for (r, &mr) in m.iter().enumerate().filter(|(_, m)| m.is_finite()) {
                let (row, kept) = (&x[r * v..(r + 1) * v], &out[r * v..(r + 1) * v]);
                let thr = 20.0f32 - mr;
                assert_eq!(row.iter().cloned().fold(f32::MIN, f32::max), 20.0, "{} row {r}", c.id);
                let at = |want: f32| row.iter().zip(kept).find(|(&a, _)| a == want).map(|(_, &k)| k);
                assert_eq!(at(thr), Some(thr), "{} row {r}: the tie at {thr}", c.id);
                let below = row
                    .iter()
                    .zip(kept)
                    .find(|(&a, _)| a < thr && a > thr - thr.abs() * 1e-6);
                assert_eq!(below.map(|(_, &k)| k), Some(f32::NEG_INFINITY), "{} row {r}", c.id);
            }
        }
    }
}
