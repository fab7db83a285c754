//! What a config may say, checked once whichever file it came from (config.json or GGUF metadata),
//! before anything is sized from it:
//! - counts bounded before any per-layer list is built (a hybrid config's num_hidden_layers of
//!   10^12 is refused in config.rs's `hybrid`, not after gigabytes of lists; the dense families
//!   look for the last layer's tensor first);
//! - every size the loaders and forwards compute from the dims (q/k/v/o rows, embedding and MLP
//!   elements, the linear-attention channels) computed once with checked arithmetic and bounded,
//!   so the plain `*` everywhere downstream cannot wrap in a release build;
//! - numbers range-checked in the dtype they are used in (rms_norm_eps is used as f32: 1e300
//!   would become inf and 1e-50 zero);
//! - token ids inside the vocabulary.
//!
//! And for config.json, the fields this engine reads but does not implement, refused by name
//! rather than run without (biases, activations, sliding windows; rope scalings in config.rs).
use super::config::Config;
use crate::error::{Error, Result};
use serde_json::Value;

/// More layers than any released model has by an order of magnitude (the largest have ~130): the
/// bound on a hybrid config's layer count, whose per-layer list is built from the config alone.
pub const MAX_LAYERS: usize = 4096;
/// Elements of one weight matrix or activation row block: 2^40 (a 1T-element matrix is far past
/// any model), so a size times any dtype's bytes (at most 8) stays far inside u64/usize.
pub const MAX_ELEMENTS: u64 = 1 << 40;

impl Config {
    /// Checks the config as a whole. `name(field)` spells a field as the file does (`field
    /// `head_dim`` for config.json, `metadata key `qwen3.attention.key_length`` for GGUF).
    pub fn validate(&self, path: &str, name: &dyn Fn(&str) -> String) -> Result<()> {
        let bad = |field: &str, detail: String| Error::File {
            path: path.to_string(),
            detail: format!("{}: {detail}", name(field)),
        };
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps > 0.0) {
            return Err(bad(
                "rms_norm_eps",
                format!(
                    "{} in f32 (the dtype the norms use): must be a positive finite f32 (at least {:e}, below {:e})",
                    self.rms_norm_eps,
                    f32::MIN_POSITIVE,
                    f32::MAX
                ),
            ));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return Err(bad(
                "rope_theta",
                format!("{} must be a positive number", self.rope_theta),
            ));
        }
        if self.head_dim % 2 != 0 {
            return Err(bad(
                "head_dim",
                format!("{} is odd: RoPE rotates pairs of dims", self.head_dim),
            ));
        }
        let d = self.dims();
        // (fields named in the error, the product): every matrix and row size the code computes
        let mut sizes: Vec<(&str, Vec<usize>)> = vec![
            ("num_attention_heads", vec![2, d.hq, d.dh, d.d]),
            ("num_key_value_heads", vec![d.hkv, d.dh, d.d]),
            ("intermediate_size", vec![d.f, d.d]),
            ("vocab_size", vec![d.v, d.d]),
            ("max_position_embeddings", vec![self.max_position_embeddings]),
        ];
        if let Some(h) = &self.hybrid {
            // conv_dim = 2 nk dk + nv dv: each part bounded here, so their sum (at most 3 x 2^40)
            // and the conv weight [conv_dim, 1, K] are checked below through their parts
            let (nk, dk, nv, dv) = (
                h.linear_num_key_heads,
                h.linear_key_head_dim,
                h.linear_num_value_heads,
                h.linear_value_head_dim,
            );
            sizes.extend([
                ("linear_num_key_heads", vec![2, nk, dk, d.d]),
                ("linear_num_value_heads", vec![nv, dv, d.d]),
                (
                    "linear_conv_kernel_dim",
                    vec![3, nk.max(nv), dk.max(dv), h.linear_conv_kernel_dim],
                ),
                ("linear_value_head_dim", vec![nv, dk, dv]),
            ]);
        }
        for (field, factors) in sizes {
            let n = factors.iter().try_fold(1u64, |a, &x| a.checked_mul(x as u64));
            if n.is_none_or(|n| n > MAX_ELEMENTS) {
                return Err(bad(
                    field,
                    format!(
                        "the sizes it makes ({}) overflow or pass {MAX_ELEMENTS} elements",
                        factors.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" x ")
                    ),
                ));
            }
        }
        for &id in &self.eos_token_ids {
            if id as usize >= self.vocab_size {
                return Err(bad(
                    "eos_token_id",
                    format!("id {id} is outside the vocabulary of {}", self.vocab_size),
                ));
            }
        }
        if let Some(id) = self.bos_token_id.filter(|&b| b as usize >= self.vocab_size) {
            return Err(bad(
                "bos_token_id",
                format!("id {id} is outside the vocabulary of {}", self.vocab_size),
            ));
        }
        Ok(())
    }
}

/// config.json's fields that change the computation in ways this engine does not implement:
/// refused by name rather than run without (which gives wrong output and exit 0). `v` is the
/// text model's object, `field` spells a field's name for the error.
pub fn refuse_unimplemented(v: &Value, model_type: &str, err: &dyn Fn(&str, &str) -> Error) -> Result<()> {
    for b in ["attention_bias", "mlp_bias"] {
        match v.get(b) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                return Err(err(
                    b,
                    &format!("biases in the {model_type} projections are not implemented"),
                ))
            }
            Some(x) => return Err(err(b, &format!("expected true or false, got {x}"))),
        }
    }
    // every family here uses SiLU in the gated MLP
    for act in ["hidden_act", "hidden_activation"] {
        match v.get(act) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "silu" || s == "swish" => {}
            Some(x) => return Err(err(act, &format!("activation {x} is not implemented (only silu)"))),
        }
    }
    // Qwen's switch: sliding_window is only read when use_sliding_window is true (real configs
    // carry `"sliding_window": 4096, "use_sliding_window": false`)
    match v.get("use_sliding_window") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            return Err(err("use_sliding_window", "sliding-window attention is not implemented"))
        }
        Some(x) => return Err(err("use_sliding_window", &format!("expected true or false, got {x}"))),
    }
    // dense families: every layer is full attention
    if model_type == "qwen3" || model_type == "llama" {
        if let Some(Value::Array(a)) = v.get("layer_types") {
            if let Some(x) = a.iter().find(|x| x.as_str() != Some("full_attention")) {
                return Err(err(
                    "layer_types",
                    &format!("{x} layers are not implemented for {model_type} (only full_attention)"),
                ));
            }
        }
    }
    Ok(())
}
