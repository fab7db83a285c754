//! Qwen3.5's per-sequence state (KV caches of the full-attention layers, conv and recurrent
//! states of the linear ones) and the forward's scratch tensors.
use super::hybrid;
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::Result;
use crate::model::config::{Config, Dims, LayerType};
use crate::model::load::kv_pair;
use crate::tensor::Tensor;

/// One layer's per-sequence state.
pub enum LayerCache {
    /// [capacity, Hkv, Dh] f32 each
    Full { k: Tensor, v: Tensor },
    /// conv [K-1, conv_dim] and recurrent [nv, dk, dv] states, f32, two of each: an op never reads
    /// and writes one buffer, so step i reads `[cur]` and writes `[1 - cur]`
    Linear { conv: [Tensor; 2], rec: [Tensor; 2] },
}

/// The hybrid cache: attention KV for full layers, conv + recurrent state for linear layers.
pub struct Cache {
    pub layers: Vec<LayerCache>,
    /// which of each linear layer's two state buffers is current
    pub cur: usize,
    pub len: usize,
    pub capacity: usize,
}

impl Cache {
    /// A fresh sequence: zero states (device buffers start zeroed), empty KV.
    pub fn new(c: &Config, dev: &dyn Backend, capacity: usize) -> Result<Cache> {
        let h = hybrid(c)?;
        let mut layers = Vec::new();
        for kind in &h.layer_types {
            layers.push(match kind {
                LayerType::Full => {
                    let (k, v) = kv_pair(c, dev, capacity)?;
                    LayerCache::Full { k, v }
                }
                LayerType::Linear => {
                    let cs = [h.linear_conv_kernel_dim - 1, h.conv_dim()];
                    let rs = [h.linear_num_value_heads, h.linear_key_head_dim, h.linear_value_head_dim];
                    let z = |s: &[usize]| -> Result<Tensor> {
                        let t = dev.alloc(DType::F32, s)?;
                        dev.upload(&t, &vec![0u8; t.nbytes()])?;
                        Ok(t)
                    };
                    LayerCache::Linear {
                        conv: [z(&cs)?, z(&cs)?],
                        rec: [z(&rs)?, z(&rs)?],
                    }
                }
            });
        }
        Ok(Cache {
            layers,
            cur: 0,
            len: 0,
            capacity,
        })
    }
}

/// Scratch tensors for a forward over T tokens, allocated once per T and reused.
pub struct Workspace {
    pub t: usize,
    pub ids: Tensor,
    pub(super) x: [Tensor; 2],
    pub(super) h: Tensor,
    pub(super) mix: Tensor,
    // linear attention
    pub(super) qkv: Tensor,
    pub(super) conv: Tensor,
    pub(super) z: Tensor,
    pub(super) b: Tensor,
    pub(super) a: Tensor,
    pub(super) core: Tensor,
    pub(super) normed: Tensor,
    // full attention
    pub(super) qg: Tensor,
    pub(super) k: Tensor,
    pub(super) v: Tensor,
    pub(super) att: Tensor,
    // MLP
    /// [T, 2F]: gate and up interleaved
    pub(super) gate_up: Tensor,
    pub(super) act: Tensor,
    /// a one-token step's stacked mixer projections (`stacked_one`)
    pub(super) one: Tensor,
    pub logits: Tensor,
    pub next: Tensor,
}

impl Workspace {
    pub fn new(c: &Config, dev: &dyn Backend, t: usize) -> Result<Workspace> {
        let hc = hybrid(c)?;
        let Dims { d, f, hq, hkv, dh, .. } = c.dims();
        let (nv, dv) = (hc.linear_num_value_heads, hc.linear_value_head_dim);
        let a = |s: &[usize]| dev.alloc(DType::F32, s);
        Ok(Workspace {
            t,
            ids: dev.alloc(DType::U32, &[t])?,
            x: [a(&[t, d])?, a(&[t, d])?],
            h: a(&[t, d])?,
            mix: a(&[t, d])?,
            qkv: a(&[t, hc.conv_dim()])?,
            conv: a(&[t, hc.conv_dim()])?,
            z: a(&[t, nv, dv])?,
            b: a(&[t, nv])?,
            a: a(&[t, nv])?,
            core: a(&[t, nv, dv])?,
            normed: a(&[t, nv, dv])?,
            qg: a(&[t, hq, 2 * dh])?,
            k: a(&[t, hkv, dh])?,
            v: a(&[t, hkv, dh])?,
            att: a(&[t, hq, dh])?,
            gate_up: a(&[t, 2 * f])?,
            act: a(&[t, f])?,
            one: a(&[1, stacked_rows(c)?])?,
            logits: a(&[t, c.vocab_size])?,
            next: dev.alloc(DType::U32, &[1])?,
        })
    }
}

/// Rows of the largest stacked mixer projection: linear attention's in_proj (conv dims, z, b, a)
/// or full attention's q (with its gate), k and v.
pub(super) fn stacked_rows(c: &Config) -> Result<usize> {
    let hc = hybrid(c)?;
    let Dims { hq, hkv, dh, .. } = c.dims();
    let nv = hc.linear_num_value_heads;
    let linear = hc.conv_dim() + nv * hc.linear_value_head_dim + 2 * nv;
    Ok(linear.max(hq * 2 * dh + 2 * hkv * dh))
}
