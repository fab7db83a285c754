//! PagedGatedAttention as the composition of the reference ops: q / k rms_norm (1 + w) and RoPE at
//! each token's position in its sequence, KvWrite of k and v at the rows the block tables give
//! those positions, PagedAttention over the pools as stored, times sigmoid(gate).
use super::paged_attention::PagedDims;
use super::{rms_norm, rope};
use crate::error::Result;
use crate::op::{paged_slot, PagedSeq};

/// Each query row's position (kv_len - q_count + i of its sequence) and pool row (through its
/// sequence's block table): ([T], [T]).
pub fn positions_and_slots(tables: &[u32], seqs: &[PagedSeq], d: PagedDims) -> (Vec<u32>, Vec<u32>) {
    let (mut pos, mut slots) = (Vec::new(), Vec::new());
    for (s, sq) in seqs.iter().enumerate() {
        for i in 0..sq.q_count as usize {
            let p = sq.first_pos() + i;
            pos.push(p as u32);
            slots.push(paged_slot(&tables[s * d.mb..(s + 1) * d.mb], d.bs, p));
        }
    }
    (pos, slots)
}

/// q [T, Hq, Dh] and k [T, Hkv, Dh] normed (x̂ (1 + w)) and rotated at positions `pos`.
#[allow(clippy::too_many_arguments)]
pub fn paged_qk_preamble(
    q: &[f32],
    k: &[f32],
    qn: &[f32],
    kn: &[f32],
    cos: &[f32],
    sin: &[f32],
    pos: &[u32],
    d: PagedDims,
    eps: f32,
    rot: usize,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let t = pos.len();
    let q = rope(&rms_norm(q, qn, d.dh, eps, true), pos, cos, sin, t, d.hq, d.dh, rot)?;
    let k = rope(&rms_norm(k, kn, d.dh, eps, true), pos, cos, sin, t, d.hkv, d.dh, rot)?;
    Ok((q, k))
}

/// o * sigmoid(gate), elementwise, in f64.
pub fn apply_gate(o: &[f32], gate: &[f32]) -> Vec<f32> {
    o.iter()
        .zip(gate)
        .map(|(&o, &g)| (o as f64 / (1.0 + (-(g as f64)).exp())) as f32)
        .collect()
}
