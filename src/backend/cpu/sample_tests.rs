use super::*;
use crate::engine::sampler::sample_params;

/// The integer 2^-z is within 2e-9 (relative, plus the last integer's rounding) of the real one, never grows as z grows, and is 0
/// from z = 46 on.
#[test]
fn exp2_is_close_monotone_and_cut() {
    let mut prev = u64::MAX;
    let mut z = 0.0f32;
    while z < 47.0 {
        let w = exp2_neg_q45(z.to_bits());
        let want = (2f64).powf(TOP_WEIGHT_BITS as f64 - z as f64);
        assert!((w as f64 - want).abs() <= want * 2e-9 + 2.0, "z {z}: {w} vs {want}");
        assert!(w <= prev, "z {z}: {w} after {prev}");
        prev = w;
        z += 0.000_731;
    }
    assert_eq!(exp2_neg_q45(0), 1 << TOP_WEIGHT_BITS);
    assert_eq!(exp2_neg_q45(46.0f32.to_bits()), 0);
    assert_eq!(exp2_neg_q45(f32::INFINITY.to_bits()), 0);
}

/// shaders/sample_weight.wgsl carries the same table (the kernel and this file must weigh alike).
#[test]
fn the_kernel_has_the_same_table() {
    let src = include_str!("../../../shaders/sample_weight.wgsl");
    let body = src.split("array<u32, 64>(").nth(1).unwrap().split(')').next().unwrap();
    let nums: Vec<u32> = body
        .split(',')
        .map(|t| t.trim().trim_end_matches('u'))
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(nums, EXP2_TABLE);
    for (j, &t) in EXP2_TABLE.iter().enumerate() {
        assert_eq!(t, (2f64.powf(-(j as f64) / 64.0) * 2f64.powi(31)).round() as u32);
    }
}

fn p(t: f32, k: usize, tp: f32, u: f32) -> [f32; 4] {
    sample_params(t, k, tp, u)
}

#[test]
fn greedy_rows_take_the_first_of_the_order() {
    let row = [1.0, 3.0, f32::NAN, 3.0, -2.0];
    assert_eq!(pick(&row, &p(0.0, 0, 1.0, 0.5)), 1);
    assert_eq!(pick(&row, &p(0.7, 1, 1.0, 0.99)), 1);
    assert_eq!(pick(&[f32::NAN, f32::NEG_INFINITY], &p(0.0, 0, 1.0, 0.0)), 1);
}

/// u walks the kept tokens in order: at 0 the head, just below 1 the last kept; top-p tiny keeps
/// the head only, top-k 2 the two best; -inf is never drawn.
#[test]
fn the_draw_walks_the_kept_tokens() {
    let row = [0.0, 2.0, f32::NEG_INFINITY, 2.0, 1.0];
    let top = 1.0 - 1.0 / 16777216.0;
    assert_eq!(pick(&row, &p(1.0, 0, 1.0, 0.0)), 1);
    assert_eq!(pick(&row, &p(1.0, 0, 1.0, top)), 0);
    assert_eq!(pick(&row, &p(1.0, 2, 1.0, top)), 3);
    assert_eq!(pick(&row, &p(1.0, 0, 1e-6, top)), 1);
    for i in 0..1000 {
        let t = pick(&row, &p(1.3, 0, 1.0, i as f32 / 1000.0));
        assert_ne!(t, 2);
    }
}

/// The draw follows the softmax: over a fine grid of u, each token's share is its probability.
#[test]
fn shares_follow_the_softmax() {
    let row = [0.3f32, -1.0, 2.0, 1.2, 0.0, -0.5];
    let t = 0.8f32;
    let n = 100_000;
    let mut count = [0usize; 6];
    for i in 0..n {
        count[pick(&row, &p(t, 0, 1.0, (i as f32 + 0.5) / n as f32)) as usize] += 1;
    }
    let e: Vec<f64> = row.iter().map(|&l| ((l - 2.0) as f64 / t as f64).exp()).collect();
    let z: f64 = e.iter().sum();
    for j in 0..6 {
        let share = count[j] as f64 / n as f64;
        assert!((share - e[j] / z).abs() < 1e-4, "token {j}: {share} vs {}", e[j] / z);
    }
}

/// Top-p keeps the shortest head of the order that reaches the mass, ties broken by id.
#[test]
fn top_p_keeps_the_shortest_head() {
    // probabilities ~ 0.4, 0.4, 0.2 (equal logits for tokens 3 and 0)
    let l2 = 2f32.ln();
    let row = [l2, 0.0, f32::NEG_INFINITY, l2];
    let top = 1.0 - 1.0 / 16777216.0;
    // 0.4 is not enough for 0.5: tokens 0 and 3 kept, u near 1 draws 3
    assert_eq!(pick(&row, &p(1.0, 0, 0.5, top)), 3);
    // 0.3: token 0 alone
    assert_eq!(pick(&row, &p(1.0, 0, 0.3, top)), 0);
    assert_eq!(pick(&row, &p(1.0, 0, 1.0, top)), 1);
}

#[test]
fn logprobs_are_the_log_softmax() {
    let row = [1.0f32, f32::NEG_INFINITY, 3.0, 0.5];
    let (ids, lp) = sample(&row, &p(0.0, 0, 1.0, 0.0), 4, 3);
    assert_eq!(ids, vec![2, 2, 0, 3]);
    let z = (1f64 - 3.0).exp() + 1.0 + (0.5f64 - 3.0).exp();
    assert!((lp[0] as f64 + z.ln()).abs() < 1e-6);
    assert!((lp[2] as f64 - (1.0 - 3.0 - z.ln())).abs() < 1e-6);
    let (_, lp) = sample(&[f32::NEG_INFINITY; 3], &p(1.0, 0, 1.0, 0.0), 3, 1);
    assert!(lp.iter().all(|l| l.is_nan()));
}
