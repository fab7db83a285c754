//! What an op moves and computes at least, for `--profile`'s fraction of the bound: the bytes it
//! must read and write once (operands, but of a table or a cache only the rows it touches) and its
//! multiply-add FLOPs where it has a product worth counting (linear, attention). Host-side, from
//! the `OpDesc`: an op whose touched rows live in device data says 0 bytes, "not known here",
//! rather than a guess. The paged ops of one sequence (a lone prefill chunk or decode step) count
//! its block table's keys: the engines size the table to the sequence, so that is its keys or at
//! most a block more (a bound, as their kernels' partition grids take it); of several sequences,
//! where the rows' split lives in seqs alone, 0.
use super::{Op, OpDesc, TensorDesc};

/// (bytes, FLOPs) of one op; 0 bytes where the host cannot tell.
pub fn traffic(desc: &OpDesc) -> (f64, f64) {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let all = |v: &[TensorDesc]| v.iter().map(|t| t.nbytes() as f64).sum::<f64>();
    let rows = |t: &TensorDesc, n: usize| -> f64 {
        let row: usize = t.shape.iter().skip(1).product();
        t.dtype.nbytes(row * n) as f64
    };
    let dflt = all(i) + all(o);
    match &desc.op {
        Op::Linear | Op::SwiGluLinear | Op::LinearSwiGlu => {
            let (m, n, k) = (o[0].shape[0], i[1].shape[0], i[1].shape[1]);
            (dflt, 2.0 * (m * n * k) as f64)
        }
        Op::AddRmsNormLinear { .. } => {
            let (m, n, k) = (o[1].shape[0], i[3].shape[0], i[3].shape[1]);
            (dflt, 2.0 * (m * n * k) as f64)
        }
        Op::LinearRmsNormRopeKv { .. } => {
            let (m, n, k) = (i[0].shape[0], i[1].shape[0], i[1].shape[1]);
            (dflt, 2.0 * (m * n * k) as f64)
        }
        Op::LinearAdd => {
            let (m, n, k) = (o[0].shape[0], i[1].shape[0], i[1].shape[1]);
            (dflt, 2.0 * (m * n * k) as f64)
        }
        Op::RmsNormLinear { .. } => {
            let (m, n, k) = (i[0].shape[0], i[2].shape[0], i[2].shape[1]);
            (dflt, 2.0 * (m * n * k) as f64)
        }
        Op::LinearAddRmsNorm { .. } => {
            let (m, n, k) = (o[0].shape[0], i[1].shape[0], i[1].shape[1]);
            (dflt, 2.0 * (m * n * k) as f64)
        }
        Op::Embedding | Op::EmbeddingShard { .. } => {
            let t = i[1].numel();
            (rows(&i[0], t) + all(&i[1..]) + all(o), 0.0)
        }
        Op::Rope { .. } => {
            let t = i[0].shape[0];
            (all(&i[..2]) + rows(&i[2], t) + rows(&i[3], t) + all(o), 0.0)
        }
        Op::RmsNormRope { .. } | Op::RmsNormRopeKv { .. } => {
            // cos / sin: the tokens' rows; the pools (RmsNormRopeKv): the rows written
            let t = i[0].shape[0];
            let tables = rows(&i[3], t) + rows(&i[4], t);
            let written = match o.len() {
                3 => o[0].nbytes() as f64 + 2.0 * kv_rows(&o[1], t),
                _ => all(o),
            };
            (all(&i[..3]) + tables + all(&i[5..]) + written, 0.0)
        }
        Op::KvWrite => {
            let t = i[0].shape[0];
            (all(i) + 2.0 * kv_rows(&o[0], t), 0.0)
        }
        Op::Attention { n_past, .. } => {
            // every query row reads its keys and values 0..=position once; a KV head's rows are
            // shared by its query heads, so the cache rows count once
            let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
            let kv = (n_past + t) as f64 * (i[1].nbytes() + i[2].nbytes()) as f64 / i[1].shape[0] as f64;
            let keys: usize = (0..t).map(|q| n_past + q + 1).sum();
            (i[0].nbytes() as f64 + kv + all(o), 4.0 * (hq * dh * keys) as f64)
        }
        Op::GatedAttention { n_past, .. } => {
            let (t, hq) = (i[0].shape[0], i[0].shape[1]);
            let dh = i[1].shape[2];
            let cache = |c: &TensorDesc| (n_past + t) as f64 * c.nbytes() as f64 / c.shape[0] as f64;
            let keys: usize = (0..t).map(|q| n_past + q + 1).sum();
            let bytes = all(&i[..4]) + o[0].nbytes() as f64 + cache(&o[1]) + cache(&o[2]);
            (bytes, 4.0 * (hq * dh * keys) as f64)
        }
        // q, the pools, block_tables, seqs -> o
        Op::PagedAttention { .. } => match lone(o[0].shape[0], &i[1], &i[3], o[0].shape[1]) {
            Some((kv, flops)) => (i[0].nbytes() as f64 + kv + all(&i[3..]) + all(o), flops),
            None => (0.0, 0.0),
        },
        // the fused ops: x, w, pos, cos, sin, slots, block_tables, seqs (rms_norm_rope_kv_attention)
        // or qg, k, v, q_norm, k_norm, cos, sin, block_tables, seqs (paged_gated_attention) -> o,
        // the pools: the front's inputs, the tables' rows of the T tokens, the new rows written,
        // then the attention's reads
        Op::RmsNormRopeKvAttention { .. } | Op::PagedGatedAttention { .. } => {
            let cos = if matches!(desc.op, Op::RmsNormRopeKvAttention { .. }) {
                3
            } else {
                5
            };
            match lone(o[0].shape[0], &o[1], &i[i.len() - 2], o[0].shape[1]) {
                Some((kv, flops)) => {
                    let t = i[0].shape[0];
                    let front = all(&i[..cos]) + rows(&i[cos], t) + rows(&i[cos + 1], t) + all(&i[cos + 2..]);
                    (front + 2.0 * kv_rows(&o[1], t) + kv + o[0].nbytes() as f64, flops)
                }
                None => (0.0, 0.0),
            }
        }
        _ => (dflt, 0.0),
    }
}

/// A paged op over one sequence: T query rows over Hq heads reading `pool`'s keys through a
/// block table `bt` [1, MB]; (bytes of the key and value rows, FLOPs) with the table's MB * BS keys
/// as the sequence's (the last row at the last of them); None for a batch of several sequences.
fn lone(t: usize, pool: &TensorDesc, bt: &TensorDesc, hq: usize) -> Option<(f64, f64)> {
    if bt.shape[0] != 1 {
        return None;
    }
    let keys = bt.shape[1] * pool.shape[1];
    let past = keys.saturating_sub(t);
    let reads: usize = (0..t).map(|q| (past + q + 1).min(keys)).sum();
    let dh = pool.shape[3];
    Some((2.0 * kv_rows(pool, keys), 4.0 * (hq * dh * reads) as f64))
}

/// Bytes of `t` pool rows of a KV pool [NB, BS, Hkv, Dh].
fn kv_rows(pool: &TensorDesc, t: usize) -> f64 {
    let row: usize = pool.shape.iter().skip(2).product();
    pool.dtype.nbytes(row * t) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn linear_counts_operands_and_flops_attention_its_rows() {
        let d = |dt, s: &[usize]| TensorDesc::new(dt, s);
        let lin = OpDesc::new(
            Op::Linear,
            vec![d(DType::F32, &[2, 8]), d(DType::BF16, &[4, 8])],
            vec![d(DType::F32, &[2, 4])],
        );
        assert_eq!(traffic(&lin), ((64 + 64 + 32) as f64, 128.0));
        // one query at position 2 of a 16-row cache: 3 key and value rows of 2 x 4 f32
        let att = OpDesc::new(
            Op::Attention { n_past: 2, scale: 1.0 },
            vec![
                d(DType::F32, &[1, 4, 4]),
                d(DType::F32, &[16, 2, 4]),
                d(DType::F32, &[16, 2, 4]),
            ],
            vec![d(DType::F32, &[1, 4, 4])],
        );
        assert_eq!(traffic(&att), ((64 + 2 * 3 * 32 + 64) as f64, (4 * 4 * 4 * 3) as f64));
    }

    /// A lone sequence's paged prefill counts its table's keys (2 blocks of 4: 8), its last row at
    /// the last key; a batch of two says "not known".
    #[test]
    fn paged_counts_a_lone_sequences_table() {
        let d = |dt, s: &[usize]| TensorDesc::new(dt, s);
        let op = Op::PagedAttention {
            scale: 1.0,
            block_size: 4,
        };
        let pool = d(DType::F16, &[10, 4, 2, 4]);
        let desc = |s: usize| {
            OpDesc::new(
                op.clone(),
                vec![
                    d(DType::F32, &[3, 4, 4]),
                    pool.clone(),
                    pool.clone(),
                    d(DType::U32, &[s, 2]),
                    d(DType::U32, &[s, 3]),
                ],
                vec![d(DType::F32, &[3, 4, 4])],
            )
        };
        // rows at positions 5, 6, 7: 6 + 7 + 8 keys of Hq 4 x Dh 4; K and V rows of 8 keys x 2 x 4 f16
        let (q, kv, bt, seqs) = (3 * 16 * 4, 2 * 8 * 8 * 2, 2 * 4, 3 * 4);
        let want = ((q + kv + bt + seqs + q) as f64, (4 * 4 * 4 * (6 + 7 + 8)) as f64);
        assert_eq!(traffic(&desc(1)), want);
        assert_eq!(traffic(&desc(2)), (0.0, 0.0));
    }
}
