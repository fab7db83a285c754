//! Qwen3.5's gated full attention as the composition of the unfused reference ops:
//! rms_norm (1 + w) -> rope -> (k, v into the cache) -> attention -> * sigmoid(gate).
use super::{attention, rms_norm, rope};
use crate::error::Result;

/// The shapes of one call: T tokens, Hq query heads, Hkv kv heads, head_dim Dh, rotary dims R.
#[derive(Clone, Copy, Debug)]
pub struct GatedAttentionDims {
    pub t: usize,
    pub hq: usize,
    pub hkv: usize,
    pub dh: usize,
    pub rot: usize,
    pub n_past: usize,
}

/// Splits qg [T, Hq, 2Dh] into q [T, Hq, Dh] and gate [T, Hq, Dh] (per head: query first).
pub fn split_q_gate(qg: &[f32], t: usize, hq: usize, dh: usize) -> (Vec<f32>, Vec<f32>) {
    let (mut q, mut g) = (Vec::with_capacity(t * hq * dh), Vec::with_capacity(t * hq * dh));
    for row in qg.chunks(2 * dh) {
        q.extend_from_slice(&row[..dh]);
        g.extend_from_slice(&row[dh..]);
    }
    (q, g)
}

/// q and k after their norm and RoPE at positions n_past.. ([T, Hq, Dh], [T, Hkv, Dh]).
#[allow(clippy::too_many_arguments)]
pub fn qk_preamble(
    q: &[f32],
    k: &[f32],
    qn: &[f32],
    kn: &[f32],
    cos: &[f32],
    sin: &[f32],
    d: GatedAttentionDims,
    eps: f32,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let pos: Vec<u32> = (d.n_past..d.n_past + d.t).map(|p| p as u32).collect();
    let q = rope(
        &rms_norm(q, qn, d.dh, eps, true),
        &pos,
        cos,
        sin,
        d.t,
        d.hq,
        d.dh,
        d.rot,
    )?;
    let k = rope(
        &rms_norm(k, kn, d.dh, eps, true),
        &pos,
        cos,
        sin,
        d.t,
        d.hkv,
        d.dh,
        d.rot,
    )?;
    Ok((q, k))
}

/// attention(q, caches) * sigmoid(gate), the caches already holding rows 0..n_past+T. f64 gate.
pub fn gated_attention(q: &[f32], gate: &[f32], kc: &[f32], vc: &[f32], d: GatedAttentionDims, scale: f32) -> Vec<f32> {
    let att = attention(q, kc, vc, d.t, d.hq, d.hkv, d.dh, d.n_past, scale);
    att.iter()
        .zip(gate)
        .map(|(&o, &g)| (o as f64 / (1.0 + (-(g as f64)).exp())) as f32)
        .collect()
}
