//! What a batched step over the paged KV cache hands a family's forward: the packed tokens of
//! several sequences (the scheduler's `StepPlan` uploaded), the KV pools, and the rows whose logits
//! are wanted. Qwen3 / Llama: qwen3::forward_paged; Qwen3.5: qwen3_5::forward_paged, which also
//! takes the per-sequence state slots (qwen3_5::HybridState) and brings its own workspace.
use super::config::{Config, Dims};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// Per layer a K and a V pool, [num_blocks, block_size, Hkv, Dh] in the KV dtype.
pub struct KvPools {
    pub k: Vec<Tensor>,
    pub v: Vec<Tensor>,
    pub num_blocks: usize,
    pub block_size: usize,
    pub dtype: DType,
}

impl KvPools {
    pub fn new(c: &Config, dev: &dyn Backend, num_blocks: usize, block_size: usize, dtype: DType) -> Result<KvPools> {
        Self::for_layers(c, dev, c.num_hidden_layers, num_blocks, block_size, dtype)
    }

    /// Pools for `layers` attention layers (a hybrid model's full-attention layers only; the family
    /// maps its layer index to a pool index).
    pub fn for_layers(
        c: &Config,
        dev: &dyn Backend,
        layers: usize,
        num_blocks: usize,
        block_size: usize,
        dtype: DType,
    ) -> Result<KvPools> {
        let Dims { hkv, dh, .. } = c.dims();
        let (mut k, mut v) = (Vec::new(), Vec::new());
        for _ in 0..layers {
            k.push(dev.alloc(dtype, &[num_blocks, block_size, hkv, dh])?);
            v.push(dev.alloc(dtype, &[num_blocks, block_size, hkv, dh])?);
        }
        Ok(KvPools {
            k,
            v,
            num_blocks,
            block_size,
            dtype,
        })
    }
}

/// A step's batch on the device: T packed tokens of S sequences, R rows sampled.
pub struct Batch {
    pub t: usize,
    pub s: usize,
    pub r: usize,
    /// [T] u32
    pub ids: Tensor,
    /// [T] u32
    pub positions: Tensor,
    /// [T] u32: each token's pool row
    pub slots: Tensor,
    /// [S, MB] u32
    pub block_tables: Tensor,
    /// [S, 3] u32: first query row, query count, kv length
    pub seqs: Tensor,
    /// [R] u32: the rows of T whose logits are wanted
    pub sample_rows: Tensor,
}

/// Scratch tensors of a batched step, allocated once for `t_max` tokens and `s_max` sampled rows;
/// each step uses their first rows.
pub struct BatchWorkspace {
    pub t_max: usize,
    pub s_max: usize,
    pub(super) x: [Tensor; 2],
    pub(super) h: Tensor,
    pub(super) q: [Tensor; 2],
    pub(super) k: [Tensor; 2],
    pub(super) v: Tensor,
    /// [T, (Hq + 2 Hkv) Dh]: the stacked q, k, v projections
    pub(super) qkv: Tensor,
    /// [T, Hq + Hkv, Dh]: q (the fused path: [T, Hq, Dh] first), or a one-token step's q and k
    /// heads normed and rotated
    pub(super) qk: Tensor,
    pub(super) att: Tensor,
    pub(super) o: Tensor,
    pub(super) gate_up: Tensor,
    pub(super) act: Tensor,
    /// the sampled rows of h, [s_max, D]
    pub(super) hs: Tensor,
    /// [s_max, V]
    pub logits: Tensor,
    /// [s_max] u32: the argmax of each logits row
    pub next: Tensor,
}

impl BatchWorkspace {
    pub fn new(c: &Config, dev: &dyn Backend, t_max: usize, s_max: usize) -> Result<BatchWorkspace> {
        let Dims { d, f, hq, hkv, dh, v } = c.dims();
        let a = |s: &[usize]| dev.alloc(DType::F32, s);
        Ok(BatchWorkspace {
            t_max,
            s_max,
            x: [a(&[t_max, d])?, a(&[t_max, d])?],
            h: a(&[t_max, d])?,
            q: [a(&[t_max, hq, dh])?, a(&[t_max, hq, dh])?],
            k: [a(&[t_max, hkv, dh])?, a(&[t_max, hkv, dh])?],
            v: a(&[t_max, hkv, dh])?,
            qkv: a(&[t_max, (hq + 2 * hkv) * dh])?,
            qk: a(&[t_max, hq + hkv, dh])?,
            att: a(&[t_max, hq, dh])?,
            o: a(&[t_max, d])?,
            gate_up: a(&[t_max, 2 * f])?,
            act: a(&[t_max, f])?,
            hs: a(&[s_max, d])?,
            logits: a(&[s_max, v])?,
            next: dev.alloc(DType::U32, &[s_max])?,
        })
    }
}
