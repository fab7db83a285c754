use crate::op::StateSeq;

/// Depthwise causal conv1d + SiLU over x [t, c] with weights w [c, k] and the previous k-1 inputs
/// `state` [k-1, c] (oldest first). Returns (y [t, c], state_out [k-1, c]). f64 accumulation.
/// With xp = cat(state, x): y[ti, ch] = silu(sum_j w[ch, j] * xp[ti + j, ch]); state_out = the
/// last k-1 rows of xp.
pub fn causal_conv1d(x: &[f32], w: &[f32], state: &[f32], t: usize, c: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    let xp = |r: usize, ch: usize| -> f32 {
        if r < k - 1 {
            state[r * c + ch]
        } else {
            x[(r - (k - 1)) * c + ch]
        }
    };
    let mut y = vec![0f32; t * c];
    for ti in 0..t {
        for ch in 0..c {
            let s: f64 = (0..k).map(|j| w[ch * k + j] as f64 * xp(ti + j, ch) as f64).sum();
            y[ti * c + ch] = silu(s) as f32;
        }
    }
    let mut st = vec![0f32; (k - 1) * c];
    for r in 0..k - 1 {
        for ch in 0..c {
            st[r * c + ch] = xp(t + r, ch);
        }
    }
    (y, st)
}

/// `causal_conv1d` per sequence of a packed batch (`op::check_state_batch`'s sequences): x [T, c],
/// pool [N, k-1, c] read and written in place at each sequence's slot (a fresh one starts from
/// zeros without reading it). Returns y [T, c].
pub fn causal_conv1d_batch(x: &[f32], w: &[f32], pool: &mut [f32], seqs: &[StateSeq], c: usize, k: usize) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    let n = (k - 1) * c;
    for s in seqs {
        let (r, t, at) = (s.row as usize, s.count as usize, s.slot as usize * n);
        let state = if s.fresh {
            vec![0f32; n]
        } else {
            pool[at..at + n].to_vec()
        };
        let (ys, st) = causal_conv1d(&x[r * c..(r + t) * c], w, &state, t, c, k);
        y[r * c..(r + t) * c].copy_from_slice(&ys);
        pool[at..at + n].copy_from_slice(&st);
    }
    y
}

pub fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn whole_sequence_equals_token_by_token() {
        let (t, c, k) = (9, 5, 4);
        let x: Vec<f32> = (0..t * c).map(|i| ((i * 37 % 11) as f32 - 5.0) / 3.0).collect();
        let w: Vec<f32> = (0..c * k).map(|i| ((i * 13 % 7) as f32 - 3.0) / 4.0).collect();
        let s0: Vec<f32> = (0..(k - 1) * c).map(|i| (i as f32 - 7.0) / 5.0).collect();
        let (y, s) = causal_conv1d(&x, &w, &s0, t, c, k);
        let mut st = s0.clone();
        for ti in 0..t {
            let (yt, s2) = causal_conv1d(&x[ti * c..(ti + 1) * c], &w, &st, 1, c, k);
            assert_eq!(yt, y[ti * c..(ti + 1) * c].to_vec());
            st = s2;
        }
        assert_eq!(st, s);
        // w[c, K-1] weighs the current token: a lone token with a zero state sees only it
        let (y1, _) = causal_conv1d(&[2.0], &[0.0, 0.0, 0.0, 1.0], &[0.0; 3], 1, 1, 4);
        assert!((y1[0] as f64 - silu(2.0)).abs() < 1e-7);
    }
}
