//! sample: per-row sampling over logits rows. Rows cycle through greedy (scale 0, and top_k 1
//! at a temperature), plain temperature sampling, top-k, top-p (0.9, 0.5, tiny) and both, hot and
//! cold temperatures, and u at 0, just below 1 and in between; the logits hold -inf (as min-p
//! leaves them), the maximum twice (a tie the order breaks by id) and a tie further down. Also a
//! row that is -inf but for a few tokens, a row of -inf and one with NaN. Ids exact, logprobs
//! within the f32 tolerance. And rows whose maximum sits where a kernel that splits the row into
//! parts (the wgpu one: PART logits a part) can get it wrong (`placed`).
use super::{seed, DType};
use crate::engine::sampler::sample_params;
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

/// (rows, vocabulary, alternatives)
const SHAPES: [(usize, usize, usize); 6] = [
    (1, 5, 5),
    (5, 257, 0),
    (64, 1000, 3),
    (7, 4097, 20),
    (3, 151936, 1),
    (13, 32000, 2),
];

/// The rows' (temperature, top_k, top_p, u), cycled.
const ROWS: [(f32, usize, f32, f32); 13] = [
    (0.0, 0, 1.0, 0.5),
    (1.0, 0, 1.0, 0.37),
    (0.7, 1, 1.0, 0.9),
    (1.0, 40, 0.9, 0.61),
    (1.3, 0, 1e-6, 0.99),
    (2.0, 5, 1.0, 0.999),
    (1.0, 0, 1.0, 1.0 - 1.0 / 16777216.0),
    (2.0, 0, 0.5, 0.5),
    (100.0, 0, 1.0, 0.73),
    (0.05, 0, 0.95, 0.21),
    (0.9, 3, 0.8, 0.999),
    (1.0, 2, 1.0, 0.5),
    (1.0, 0, 1.0, 0.0),
];

fn params(r: usize, salt: u64) -> Vec<f32> {
    let mut rng = Rng::new(salt);
    (0..r)
        .flat_map(|k| {
            let (t, top_k, top_p, u) = ROWS[k % ROWS.len()];
            // past the first cycle, u is random (24 bits, as the engine draws it)
            let u = if k < ROWS.len() {
                u
            } else {
                (rng.next_u64() >> 40) as f32 / 16777216.0
            };
            sample_params(t, top_k, top_p, u)
        })
        .collect()
}

/// N(0, 3^2) logits with 2% -inf, the maximum 12.5 twice and a tie at 4.25 in every row; in
/// row 3 (mod 8) only eight tokens are finite.
fn logits(r: usize, v: usize, s: u64) -> Vec<f32> {
    let mut rng = Rng::new(s);
    let mut x: Vec<f32> = (0..r * v)
        .map(|_| match rng.next_u64() % 50 {
            0 => f32::NEG_INFINITY,
            _ => (rng.normal() * 3.0) as f32,
        })
        .collect();
    for k in 0..r {
        let row = &mut x[k * v..(k + 1) * v];
        if k % 8 == 3 && v > 8 {
            for (j, l) in row.iter_mut().enumerate() {
                if j % (v / 8) != 0 {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        let mut at = |val: f32| row[(rng.next_u64() % v as u64) as usize] = val;
        at(12.5);
        at(12.5);
        at(4.25);
        at(4.25);
    }
    x
}

/// The wgpu kernel's part (backend/wgpu/sample.rs): the head and the sum of exp are made per part.
const PART: usize = 4096;

/// `logits` with the row's maximum placed by row (mod 6): the last element of the row (in the
/// short last part); a tie across a part boundary (PART - 1 and PART: the lower id); at a part's
/// first element, tied further on with a later part's last and the row's last; tied in the two
/// last parts and within a part 256 apart (one invocation's elements in a kernel of 256); a row whose part 0 is NaN and part 1 -inf, its maximum the last part's first
/// element; +inf in the last part (logprobs NaN). v > 3 PART.
fn placed(r: usize, v: usize, s: u64) -> Vec<f32> {
    let mut x = logits(r, v, s);
    for (k, row) in x.chunks_mut(v).enumerate() {
        let at: &[usize] = match k % 6 {
            0 => &[v - 1],
            1 => &[PART - 1, PART],
            2 => &[PART, 2 * PART - 1, v - 1],
            3 => &[2 * PART, 2 * PART + 256, v - 1],
            4 => {
                row[..PART].fill(f32::NAN);
                row[PART..2 * PART].fill(f32::NEG_INFINITY);
                &[3 * PART]
            }
            _ => {
                row[v - 1] = f32::INFINITY;
                &[]
            }
        };
        for &j in at {
            row[j] = 20.0;
        }
    }
    x
}

fn case(tag: &str, r: usize, v: usize, k: usize, x: Vec<f32>, p: Vec<f32>) -> Case {
    Case::new(
        "sample",
        &format!("{tag},k{k}"),
        Op::Sample { k },
        vec![
            input(DType::F32, &[r, v], Init::Values(x)),
            input(DType::F32, &[r, 4], Init::Values(p)),
        ],
        vec![
            TensorDesc::new(DType::U32, &[r, 1 + k]),
            TensorDesc::new(DType::F32, &[r, 1 + k]),
        ],
    )
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (r, n, k) in SHAPES {
        let s = seed(&format!("sample{r}x{n}"));
        v.push(case("f32", r, n, k, logits(r, n, s), params(r, s)));
    }
    // the maximum placed about the parts, 11 rows, V not a whole number of parts; sampled and
    // all greedy
    let (r, n) = (11, 3 * PART + 37);
    let s = seed("sample-parts");
    v.push(case("parts", r, n, 4, placed(r, n, s), params(r, s)));
    let greedy: Vec<f32> = (0..r).flat_map(|_| sample_params(0.0, 0, 1.0, 0.5)).collect();
    v.push(case("parts-greedy", r, n, 2, placed(r, n, s), greedy));
    // V a whole number of parts
    let (r, n) = (5, 4 * PART);
    let s = seed("sample-parts-whole");
    v.push(case("parts", r, n, 1, placed(r, n, s), params(r, s)));
    // a row of -inf, a row with NaN and a tie at the top, a row of one finite token, each sampled
    let n = 9;
    let mut x = vec![f32::NEG_INFINITY; n];
    x.extend((0..n).map(|j| match j {
        2 => f32::NAN,
        3 | 6 => 5.0,
        _ => j as f32 * 0.5,
    }));
    x.extend((0..n).map(|j| if j == 7 { -3.0 } else { f32::NEG_INFINITY }));
    let p: Vec<f32> = [(1.0, 0, 1.0, 0.9), (1.0, 0, 0.9, 0.7), (0.8, 3, 1.0, 0.99)]
        .iter()
        .flat_map(|&(t, k, tp, u)| sample_params(t, k, tp, u))
        .collect();
    v.push(case("edges", 3, n, 3, x, p));
    v
}

#[cfg(test)]
mod tests {
    use crate::parity::case::Init;

    /// The cases choose: among the sampling rows of the large cases, the drawn token is often not
    /// the greedy one (so a kernel that only did argmax would fail), and greedy rows pick the
    /// lower id of the tied maximum.
    #[test]
    fn sampling_rows_leave_the_head() {
        let mut left = 0;
        for c in super::cases() {
            let (Init::Values(x), Init::Values(p)) = (&c.inputs[0].init, &c.inputs[1].init) else {
                panic!("{}: explicit values expected", c.id)
            };
            let v = c.inputs[0].desc.shape[1];
            for (row, pr) in x.chunks(v).zip(p.chunks(4)) {
                let greedy = crate::backend::cpu::pick(row, &[0.0, 0.0, 1.0, 0.0]);
                if crate::backend::cpu::pick(row, pr) != greedy {
                    left += 1;
                }
            }
        }
        assert!(left >= 20, "only {left} sampled rows left the greedy token");
    }
}
