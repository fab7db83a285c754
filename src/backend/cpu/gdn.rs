//! The gated delta rule (Qwen3.5 Gated DeltaNet), f64 throughout. `gdn_recurrent` is the
//! definition (transformers' torch_recurrent_gated_delta_rule) and the reference for both ops;
//! `gdn_chunked` follows transformers' torch_chunk_gated_delta_rule (U/W form, chunk 64) so the
//! chunked algorithm itself is checked on the host against the recurrence.
use crate::op::{StateSeq, GDN_L2_EPS};

#[derive(Clone, Copy, Debug)]
pub struct GdnDims {
    pub t: usize,
    pub nk: usize,
    pub nv: usize,
    pub dk: usize,
    pub dv: usize,
}

/// One token's inputs for one value head, prepared: q (l2-normed, / sqrt(dk)), k (l2-normed), v,
/// beta = sigmoid(b), g = -exp(a_log) * softplus(a + dt_bias).
struct Step {
    q: Vec<f64>,
    k: Vec<f64>,
    v: Vec<f64>,
    beta: f64,
    g: f64,
}

fn softplus(x: f64) -> f64 {
    // torch.nn.functional.softplus (beta 1, threshold 20)
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

fn l2norm(x: &[f32]) -> Vec<f64> {
    let ss: f64 = x.iter().map(|&v| v as f64 * v as f64).sum();
    let inv = 1.0 / (ss + GDN_L2_EPS).sqrt();
    x.iter().map(|&v| v as f64 * inv).collect()
}

#[allow(clippy::too_many_arguments)]
fn prepare(qkv: &[f32], b: &[f32], a: &[f32], a_log: &[f32], dt_bias: &[f32], d: GdnDims, t: usize, h: usize) -> Step {
    let c = 2 * d.nk * d.dk + d.nv * d.dv;
    let row = &qkv[t * c..(t + 1) * c];
    let kh = h / (d.nv / d.nk); // repeat_interleave: value heads h*r..h*r+r-1 share key head h
    let qo = kh * d.dk;
    let ko = d.nk * d.dk + kh * d.dk;
    let vo = 2 * d.nk * d.dk + h * d.dv;
    let scale = 1.0 / (d.dk as f64).sqrt();
    let q = l2norm(&row[qo..qo + d.dk]).into_iter().map(|x| x * scale).collect();
    let k = l2norm(&row[ko..ko + d.dk]);
    let v = row[vo..vo + d.dv].iter().map(|&x| x as f64).collect();
    let beta = 1.0 / (1.0 + (-(b[t * d.nv + h] as f64)).exp());
    let g = -(a_log[h] as f64).exp() * softplus(a[t * d.nv + h] as f64 + dt_bias[h] as f64);
    Step { q, k, v, beta, g }
}

/// Token by token. state [nv, dk, dv]. Returns (o [t, nv, dv], state_out [nv, dk, dv]).
#[allow(clippy::too_many_arguments)]
pub fn gdn_recurrent(
    qkv: &[f32],
    b: &[f32],
    a: &[f32],
    a_log: &[f32],
    dt_bias: &[f32],
    state: &[f32],
    d: GdnDims,
) -> (Vec<f32>, Vec<f32>) {
    let (dk, dv) = (d.dk, d.dv);
    let mut o = vec![0f32; d.t * d.nv * dv];
    let mut out_state = vec![0f32; d.nv * dk * dv];
    for h in 0..d.nv {
        let mut s: Vec<f64> = state[h * dk * dv..(h + 1) * dk * dv]
            .iter()
            .map(|&x| x as f64)
            .collect();
        for t in 0..d.t {
            let p = prepare(qkv, b, a, a_log, dt_bias, d, t, h);
            let decay = p.g.exp();
            s.iter_mut().for_each(|x| *x *= decay);
            for j in 0..dv {
                let kv: f64 = (0..dk).map(|i| s[i * dv + j] * p.k[i]).sum();
                let delta = (p.v[j] - kv) * p.beta;
                for i in 0..dk {
                    s[i * dv + j] += p.k[i] * delta;
                }
                let oj: f64 = (0..dk).map(|i| s[i * dv + j] * p.q[i]).sum();
                o[(t * d.nv + h) * dv + j] = oj as f32;
            }
        }
        for (dst, &x) in out_state[h * dk * dv..(h + 1) * dk * dv].iter_mut().zip(&s) {
            *dst = x as f32;
        }
    }
    (o, out_state)
}

/// `gdn_recurrent` per sequence of a packed batch (`op::check_state_batch`'s sequences): qkv, b, a
/// [T, ..]; pool [N, nv, dk, dv] read and written in place at each sequence's slot (a fresh one
/// starts from zeros without reading it). `d.t` is T. Returns o [T, nv, dv].
/// One token at a time, the state rounded to f32 after each (as the pool stores it): so a token's
/// bits are a function of the f32 state before it and its inputs, whatever the chunk it came in
/// (an f64 state carried through a chunk would make the bits depend on where chunks start).
#[allow(clippy::too_many_arguments)]
pub fn gdn_batch(
    qkv: &[f32],
    b: &[f32],
    a: &[f32],
    a_log: &[f32],
    dt_bias: &[f32],
    pool: &mut [f32],
    seqs: &[StateSeq],
    d: GdnDims,
) -> Vec<f32> {
    let (c, n, orow) = (2 * d.nk * d.dk + d.nv * d.dv, d.nv * d.dk * d.dv, d.nv * d.dv);
    let mut o = vec![0f32; d.t * orow];
    for s in seqs {
        let (r, t, at) = (s.row as usize, s.count as usize, s.slot as usize * n);
        let mut state = if s.fresh {
            vec![0f32; n]
        } else {
            pool[at..at + n].to_vec()
        };
        for i in r..r + t {
            let row = |x: &[f32], w: usize| x[i * w..(i + 1) * w].to_vec();
            let (os, st) = gdn_recurrent(
                &row(qkv, c),
                &row(b, d.nv),
                &row(a, d.nv),
                a_log,
                dt_bias,
                &state,
                GdnDims { t: 1, ..d },
            );
            o[i * orow..(i + 1) * orow].copy_from_slice(&os);
            state = st;
        }
        pool[at..at + n].copy_from_slice(&state);
    }
    o
}

/// Chunks of `chunk` tokens, zero-padded at the end (padded steps have q = k = v = 0, beta = 0,
/// g = 0 and leave the state unchanged). Per chunk, with G the inclusive cumsum of g,
/// D[i, j] = exp(G_i - G_j) (j <= i), kb = k beta, vb = v beta, A = strictly_lower(kb kᵀ ∘ D):
/// U = (I + A)⁻¹ vb, W = (I + A)⁻¹ (kb ∘ exp(G)), v_new = U - W S,
/// o = (q ∘ exp(G)) S + (q kᵀ ∘ D) v_new, S = S exp(G_last) + (k ∘ exp(G_last - G))ᵀ v_new.
#[allow(clippy::too_many_arguments)]
pub fn gdn_chunked(
    qkv: &[f32],
    b: &[f32],
    a: &[f32],
    a_log: &[f32],
    dt_bias: &[f32],
    state: &[f32],
    d: GdnDims,
    chunk: usize,
) -> (Vec<f32>, Vec<f32>) {
    let (dk, dv, n) = (d.dk, d.dv, chunk);
    let mut o = vec![0f32; d.t * d.nv * dv];
    let mut out_state = vec![0f32; d.nv * dk * dv];
    let zero = || Step {
        q: vec![0.0; dk],
        k: vec![0.0; dk],
        v: vec![0.0; dv],
        beta: 0.0,
        g: 0.0,
    };
    for h in 0..d.nv {
        let mut s: Vec<f64> = state[h * dk * dv..(h + 1) * dk * dv]
            .iter()
            .map(|&x| x as f64)
            .collect();
        for c0 in (0..d.t).step_by(n) {
            let p: Vec<Step> = (c0..c0 + n)
                .map(|t| {
                    if t < d.t {
                        prepare(qkv, b, a, a_log, dt_bias, d, t, h)
                    } else {
                        zero()
                    }
                })
                .collect();
            let mut gc = vec![0f64; n];
            let mut acc = 0.0;
            for i in 0..n {
                acc += p[i].g;
                gc[i] = acc;
            }
            let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
            let dm = |i: usize, j: usize| if j <= i { (gc[i] - gc[j]).exp() } else { 0.0 };
            // forward substitution: X = (I + A)^-1 B, A[i][j] = beta_i k_i.k_j D[i][j] for j < i
            let solve = |rhs: &dyn Fn(usize) -> Vec<f64>, width: usize| -> Vec<Vec<f64>> {
                let mut x: Vec<Vec<f64>> = Vec::with_capacity(n);
                for i in 0..n {
                    let mut r = rhs(i);
                    for (j, xj) in x.iter().enumerate() {
                        let aij = p[i].beta * dot(&p[i].k, &p[j].k) * dm(i, j);
                        for c in 0..width {
                            r[c] -= aij * xj[c];
                        }
                    }
                    x.push(r);
                }
                x
            };
            let u = solve(&|i| p[i].v.iter().map(|x| x * p[i].beta).collect(), dv);
            let w = solve(&|i| p[i].k.iter().map(|x| x * p[i].beta * gc[i].exp()).collect(), dk);
            // v_new = U - W S
            let v_new: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..dv)
                        .map(|j| u[i][j] - (0..dk).map(|m| w[i][m] * s[m * dv + j]).sum::<f64>())
                        .collect()
                })
                .collect();
            for i in 0..n {
                let t = c0 + i;
                if t >= d.t {
                    break;
                }
                for j in 0..dv {
                    let inter: f64 = (0..dk).map(|m| p[i].q[m] * gc[i].exp() * s[m * dv + j]).sum();
                    let intra: f64 = (0..=i).map(|m| dot(&p[i].q, &p[m].k) * dm(i, m) * v_new[m][j]).sum();
                    o[(t * d.nv + h) * dv + j] = (inter + intra) as f32;
                }
            }
            let glast = gc[n - 1];
            for m in 0..dk {
                for j in 0..dv {
                    let add: f64 = (0..n).map(|i| p[i].k[m] * (glast - gc[i]).exp() * v_new[i][j]).sum();
                    s[m * dv + j] = s[m * dv + j] * glast.exp() + add;
                }
            }
        }
        for (dst, &x) in out_state[h * dk * dv..(h + 1) * dk * dv].iter_mut().zip(&s) {
            *dst = x as f32;
        }
    }
    (o, out_state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::Rng;

    /// qkv, b, a, a_log, dt_bias, state
    type Inputs = (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>);

    fn inputs(d: GdnDims, seed: u64) -> Inputs {
        let mut r = Rng::new(seed);
        let mut n = |len: usize, s: f64| -> Vec<f32> { (0..len).map(|_| (r.normal() * s) as f32).collect() };
        let c = 2 * d.nk * d.dk + d.nv * d.dv;
        let qkv = n(d.t * c, 1.0);
        let b = n(d.t * d.nv, 1.0);
        let a = n(d.t * d.nv, 1.0);
        let a_log: Vec<f32> = (0..d.nv).map(|h| (1.0 + 3.0 * h as f32 / d.nv as f32).ln()).collect();
        let dt_bias = n(d.nv, 0.5);
        let state = n(d.nv * d.dk * d.dv, 0.1);
        (qkv, b, a, a_log, dt_bias, state)
    }

    /// The chunked algorithm equals the recurrence at and around the chunk boundary.
    #[test]
    fn chunked_equals_recurrent() {
        for (nk, nv, dk, dv) in [(2, 4, 32, 32), (2, 6, 16, 24), (1, 1, 5, 7)] {
            for t in [1, 63, 64, 65, 150] {
                let d = GdnDims { t, nk, nv, dk, dv };
                let (qkv, b, a, a_log, dt_bias, state) = inputs(d, (t * 131 + nv) as u64);
                let (o_r, s_r) = gdn_recurrent(&qkv, &b, &a, &a_log, &dt_bias, &state, d);
                let (o_c, s_c) = gdn_chunked(&qkv, &b, &a, &a_log, &dt_bias, &state, d, crate::op::GDN_CHUNK);
                let err = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                let scale = o_r.iter().map(|x| x.abs()).fold(0f32, f32::max).max(1e-3);
                assert!(
                    err(&o_r, &o_c) <= 1e-5 * scale,
                    "o: (nk,nv,dk,dv)=({nk},{nv},{dk},{dv}) T={t}: {}",
                    err(&o_r, &o_c)
                );
                assert!(
                    err(&s_r, &s_c) <= 1e-5,
                    "state: ({nk},{nv},{dk},{dv}) T={t}: {}",
                    err(&s_r, &s_c)
                );
                // and a different chunk length through the same code: one-token chunks are the recurrence
                let (o_1, _) = gdn_chunked(&qkv, &b, &a, &a_log, &dt_bias, &state, d, 1);
                assert!(err(&o_r, &o_1) <= 1e-5 * scale);
            }
        }
    }

    /// Prefill then decode: the state carries over exactly.
    #[test]
    fn split_sequences_carry_the_state() {
        let d = GdnDims {
            t: 70,
            nk: 2,
            nv: 4,
            dk: 8,
            dv: 8,
        };
        let (qkv, b, a, a_log, dt_bias, state) = inputs(d, 7);
        let (o, s) = gdn_recurrent(&qkv, &b, &a, &a_log, &dt_bias, &state, d);
        let c = 2 * d.nk * d.dk + d.nv * d.dv;
        let cut = 66;
        let d1 = GdnDims { t: cut, ..d };
        let d2 = GdnDims { t: d.t - cut, ..d };
        let (o1, s1) = gdn_chunked(
            &qkv[..cut * c],
            &b[..cut * d.nv],
            &a[..cut * d.nv],
            &a_log,
            &dt_bias,
            &state,
            d1,
            64,
        );
        let (o2, s2) = gdn_recurrent(
            &qkv[cut * c..],
            &b[cut * d.nv..],
            &a[cut * d.nv..],
            &a_log,
            &dt_bias,
            &s1,
            d2,
        );
        let joined: Vec<f32> = o1.into_iter().chain(o2).collect();
        let err = joined.iter().zip(&o).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(err < 1e-5, "{err}");
        assert!(s2.iter().zip(&s).all(|(a, b)| (a - b).abs() < 1e-5));
    }
}
