//! PagedAttention: each sequence's keys gathered from the pools through its block table, then the
//! contiguous reference (`attention`, f64 softmax) over them.
use super::attention;
use crate::op::{paged_slot, PagedSeq};

/// The head layout of a paged call: Hq query heads, Hkv kv heads, head_dim Dh, block size BS,
/// MB blocks per table row.
#[derive(Clone, Copy, Debug)]
pub struct PagedDims {
    pub hq: usize,
    pub hkv: usize,
    pub dh: usize,
    pub bs: usize,
    pub mb: usize,
}

/// Rows 0..kv_len of sequence `s` gathered from a pool ([NB * BS, Hkv, Dh] as f32): [kv_len, Hkv, Dh].
pub fn gather(pool: &[f32], tables: &[u32], s: usize, kv_len: usize, d: PagedDims) -> Vec<f32> {
    let row = d.hkv * d.dh;
    let table = &tables[s * d.mb..(s + 1) * d.mb];
    (0..kv_len)
        .flat_map(|j| {
            let r = paged_slot(table, d.bs, j) as usize;
            pool[r * row..(r + 1) * row].iter().copied()
        })
        .collect()
}

/// q [T, Hq, Dh] of the packed sequences `seqs` over the pools -> o [T, Hq, Dh]. The sequences are
/// checked by the caller (`op::check_paged_batch`); only the first kv_len positions are gathered.
pub fn paged_attention(
    q: &[f32],
    kp: &[f32],
    vp: &[f32],
    tables: &[u32],
    seqs: &[PagedSeq],
    d: PagedDims,
    scale: f32,
) -> Vec<f32> {
    let qrow = d.hq * d.dh;
    let mut o = vec![0f32; q.len()];
    for (s, sq) in seqs.iter().enumerate() {
        let (a, n, kv) = (sq.q_start as usize, sq.q_count as usize, sq.kv_len as usize);
        let (kc, vc) = (gather(kp, tables, s, kv, d), gather(vp, tables, s, kv, d));
        let y = attention(
            &q[a * qrow..(a + n) * qrow],
            &kc,
            &vc,
            n,
            d.hq,
            d.hkv,
            d.dh,
            sq.first_pos(),
            scale,
        );
        o[a * qrow..(a + n) * qrow].copy_from_slice(&y);
    }
    o
}
