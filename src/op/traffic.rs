//! What an op moves and computes at least, for `--profile`'s fraction of the bound: the bytes it
//! must read and write once (operands, but of a table or a cache only the rows it touches) and its
//! multiply-add FLOPs where it has a product worth counting (linear, attention). Host-side, from
//! the `OpDesc`: an op whose touched rows live in device data (the paged ops' sequence lengths)
//! says 0 bytes, "not known here", rather than a guess.
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
        // the keys a query reads are in the sequences' table on the device
        Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } | Op::RmsNormRopeKvAttention { .. } => (0.0, 0.0),
        _ => (dflt, 0.0),
    }
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
}
