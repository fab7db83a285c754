//! The reference of `Op::MinP`: each row keeps the logits within `margin` of its largest one and
//! drops the others to -inf. One f32 subtraction and comparisons, so every device agrees bit for bit.

/// logits [R, V], margin `[R]` -> out [R, V].
pub fn min_p(logits: &[f32], margin: &[f32], v: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(logits.len());
    for (row, &m) in logits.chunks(v).zip(margin) {
        if m == f32::INFINITY {
            out.extend_from_slice(row);
            continue;
        }
        // the largest non-NaN logit; none (a row of NaN): every element is dropped
        let top = row.iter().copied().filter(|l| !l.is_nan()).reduce(f32::max);
        let thr = top.map(|t| t - m).unwrap_or(f32::NAN);
        out.extend(row.iter().map(|&l| if l >= thr { l } else { f32::NEG_INFINITY }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    const NEG: f32 = f32::NEG_INFINITY;

    #[test]
    fn keeps_what_is_within_the_margin_ties_included() {
        assert_eq!(min_p(&[1.0, 3.0, 2.0, 0.5], &[1.0], 4), vec![NEG, 3.0, 2.0, NEG]);
        // margin 0 (min_p = 1): every copy of the maximum stays
        assert_eq!(min_p(&[3.0, 1.0, 3.0], &[0.0], 3), vec![3.0, NEG, 3.0]);
    }

    #[test]
    fn infinite_margin_copies_and_nan_is_dropped() {
        let row = [f32::NAN, -0.0, NEG, 7.0];
        let same = min_p(&row, &[f32::INFINITY], 4);
        assert!(same[0].is_nan() && same[1].to_bits() == (-0.0f32).to_bits() && same[2] == NEG);
        assert_eq!(min_p(&row, &[100.0], 4)[..2], [NEG, -0.0]);
        assert_eq!(min_p(&[f32::NAN, f32::NAN], &[1.0], 2), vec![NEG, NEG]);
    }
}
