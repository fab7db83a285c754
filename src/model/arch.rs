//! The model families behind one engine: config.json's model_type picks Qwen3 (dense) or Qwen3.5
//! (Gated DeltaNet hybrid). Weights, the per-sequence cache and the workspace are enums over the
//! families; `forward` records the family's forward.
use super::config::Config;
use super::load::Load;
use super::{qwen3, qwen3_5, Pass, Source};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

pub enum Weights {
    Qwen3(qwen3::Weights),
    Qwen3_5(qwen3_5::Weights),
}

/// A sequence's state: the KV cache (Qwen3), or the hybrid cache (Qwen3.5).
pub enum Cache {
    Qwen3(qwen3::KvCache),
    Qwen3_5(qwen3_5::Cache),
}

#[allow(clippy::large_enum_variant)]
pub enum Workspace {
    Qwen3(qwen3::Workspace),
    Qwen3_5(qwen3_5::Workspace),
}

fn is_hybrid(c: &Config) -> bool {
    c.hybrid.is_some()
}

impl Weights {
    /// Checks every expected tensor against config.json, then uploads the weights to `dev`.
    pub fn load(
        c: &Config,
        src: &Source,
        dev: &dyn Backend,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Weights> {
        let req = Load {
            c,
            src,
            dev,
            max_ctx,
            progress,
        };
        Ok(if is_hybrid(c) {
            Weights::Qwen3_5(qwen3_5::Weights::load(req)?)
        } else {
            Weights::Qwen3(qwen3::Weights::load(req)?)
        })
    }
    /// Bytes of weights a decode step reads.
    pub fn decode_bytes(&self) -> usize {
        match self {
            Weights::Qwen3(w) => w.decode_bytes,
            Weights::Qwen3_5(w) => w.decode_bytes,
        }
    }
}

impl Cache {
    pub fn new(c: &Config, dev: &dyn Backend, capacity: usize) -> Result<Cache> {
        Ok(if is_hybrid(c) {
            Cache::Qwen3_5(qwen3_5::Cache::new(c, dev, capacity)?)
        } else {
            Cache::Qwen3(qwen3::KvCache::new(c, dev, capacity)?)
        })
    }
    /// Tokens seen.
    pub fn len(&self) -> usize {
        match self {
            Cache::Qwen3(k) => k.len,
            Cache::Qwen3_5(k) => k.len,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn capacity(&self) -> usize {
        match self {
            Cache::Qwen3(k) => k.capacity,
            Cache::Qwen3_5(k) => k.capacity,
        }
    }
}

impl Workspace {
    pub fn new(c: &Config, dev: &dyn Backend, t: usize) -> Result<Workspace> {
        Ok(if is_hybrid(c) {
            Workspace::Qwen3_5(qwen3_5::Workspace::new(c, dev, t)?)
        } else {
            Workspace::Qwen3(qwen3::Workspace::new(c, dev, t)?)
        })
    }
    /// The token-id upload slot `[T]` (u32).
    pub fn ids(&self) -> &Tensor {
        match self {
            Workspace::Qwen3(w) => &w.ids,
            Workspace::Qwen3_5(w) => &w.ids,
        }
    }
    /// Logits [T, V] (f32); with Logits::Last only the first row is written.
    pub fn logits(&self) -> &Tensor {
        match self {
            Workspace::Qwen3(w) => &w.logits,
            Workspace::Qwen3_5(w) => &w.logits,
        }
    }
    /// The argmax output `[1]` (u32).
    pub fn next(&self) -> &Tensor {
        match self {
            Workspace::Qwen3(w) => &w.next,
            Workspace::Qwen3_5(w) => &w.next,
        }
    }
}

/// Records one forward (`Pass`) of the model family over the workspace's T tokens (see
/// qwen3::forward, qwen3_5::forward).
pub fn forward(w: &Weights, ws: &Workspace, cache: &mut Cache, pass: Pass) -> Result<()> {
    match (w, ws, cache) {
        (Weights::Qwen3(w), Workspace::Qwen3(ws), Cache::Qwen3(k)) => qwen3::forward(w, ws, k, pass),
        (Weights::Qwen3_5(w), Workspace::Qwen3_5(ws), Cache::Qwen3_5(k)) => qwen3_5::forward(w, ws, k, pass),
        _ => Err(Error::Other(
            "forward: the weights, workspace and cache belong to different model families".into(),
        )),
    }
}

/// Bytes of per-sequence state one decode step moves at context `ctx`: K and V of every full
/// attention layer read up to ctx; each linear layer's recurrent and conv states read once and
/// written once (f32).
pub fn state_bytes_per_token(c: &Config, ctx: f64) -> f64 {
    let kv_row = (c.num_key_value_heads * c.head_dim * 4) as f64;
    match &c.hybrid {
        None => 2.0 * c.num_hidden_layers as f64 * ctx * kv_row,
        Some(h) => {
            let full = h
                .layer_types
                .iter()
                .filter(|t| **t == super::config::LayerType::Full)
                .count() as f64;
            let linear = h.layer_types.len() as f64 - full;
            let rec = (h.linear_num_value_heads * h.linear_key_head_dim * h.linear_value_head_dim * 4) as f64;
            let conv = ((h.linear_conv_kernel_dim - 1) * h.conv_dim() * 4) as f64;
            2.0 * full * ctx * kv_row + linear * 2.0 * (rec + conv)
        }
    }
}
