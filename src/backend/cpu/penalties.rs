//! The reference of `Op::Penalties`: repetition, presence and frequency penalties, row by row.
//! f32 throughout, one operation at a time, in the contract's order (src/op/mod.rs), so a kernel
//! that makes the same operations agrees bit for bit.
use crate::op::PROMPT_SEEN;

/// One element: logit `l` of a token with `count` (output count | PROMPT_SEEN) under
/// `p` = (rep, rep_inv, presence, frequency).
pub fn penalize(l: f32, count: u32, p: &[f32]) -> f32 {
    if count == 0 || !l.is_finite() {
        return l;
    }
    let (rep, rep_inv, presence, frequency) = (p[0], p[1], p[2], p[3]);
    let mut x = if l > 0.0 { l * rep_inv } else { l * rep };
    let n = count & !PROMPT_SEEN;
    if n > 0 {
        // the product rounded on its own, then the subtraction (Rust never fuses them)
        x -= frequency * n as f32;
        x -= presence;
    }
    x
}

/// logits [R, V], counts [R, V], params [R, 4] -> out [R, V].
pub fn penalties(logits: &[f32], counts: &[u32], params: &[f32], v: usize) -> Vec<f32> {
    logits
        .chunks(v)
        .zip(counts.chunks(v))
        .zip(params.chunks(4))
        .flat_map(|((l, c), p)| l.iter().zip(c).map(move |(&l, &c)| penalize(l, c, p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFF: [f32; 4] = [1.0, 1.0, 0.0, 0.0];

    #[test]
    fn repetition_divides_positive_and_multiplies_negative_logits() {
        let p = [2.0, 0.5, 0.0, 0.0];
        assert_eq!(penalize(3.0, PROMPT_SEEN, &p), 1.5);
        assert_eq!(penalize(-3.0, PROMPT_SEEN, &p), -6.0);
        assert_eq!(penalize(0.0, 1, &p), 0.0);
        // unseen tokens and -inf are untouched
        assert_eq!(penalize(3.0, 0, &p), 3.0);
        assert_eq!(penalize(f32::NEG_INFINITY, 5, &[2.0, 0.5, 1.0, 1.0]), f32::NEG_INFINITY);
    }

    #[test]
    fn presence_once_frequency_per_occurrence_output_only() {
        let p = [1.0, 1.0, 0.5, 0.25];
        // 3 occurrences in the output: 1 - 3 * 0.25 - 0.5
        assert_eq!(penalize(1.0, 3, &p), -0.25);
        assert_eq!(penalize(1.0, 3 | PROMPT_SEEN, &p), -0.25);
        // in the prompt only: presence and frequency do not apply
        assert_eq!(penalize(1.0, PROMPT_SEEN, &p), 1.0);
    }

    #[test]
    fn off_values_copy_every_bit() {
        for l in [1.5f32, -2.25, 0.0, -0.0, 1e-40, f32::MAX, f32::NEG_INFINITY] {
            for c in [0, 1, 7, PROMPT_SEEN, PROMPT_SEEN | 2] {
                assert_eq!(penalize(l, c, &OFF).to_bits(), l.to_bits(), "{l} {c}");
            }
        }
    }

    #[test]
    fn rows_take_their_own_params() {
        let out = penalties(
            &[2.0, 2.0, 2.0, 2.0],
            &[1, 0, 1, 0],
            &[2.0, 0.5, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0],
            2,
        );
        assert_eq!(out, vec![1.0, 2.0, 1.0, 2.0]);
    }
}
