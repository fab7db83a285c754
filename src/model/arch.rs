//! The model families behind one engine: config.json's model_type picks Qwen3 (dense) or Qwen3.5
//! (Gated DeltaNet hybrid). Weights are an enum over the families; their batched forwards run a
//! serving step (serve/engine.rs) or a lone sequence (lone.rs).
use super::config::Config;
use super::load::Load;
use super::{qwen3, qwen3_5, Source};
use crate::backend::Backend;
use crate::error::Result;

pub enum Weights {
    Qwen3(qwen3::Weights),
    Qwen3_5(qwen3_5::Weights),
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
