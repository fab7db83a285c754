//! config.json as Hugging Face writes it. Every error names the file and the field.
use crate::error::{Error, Result};
pub use crate::op::Llama3Rope;
use serde_json::Value;
use std::path::Path;

/// The architectures this build knows. Anything else is refused by name. `qwen3_5` is the
/// vision-language checkpoint (its text model under `text_config`, weights under
/// `model.language_model.`): its text part loads.
pub const KNOWN_MODEL_TYPES: [&str; 4] = ["qwen3", "qwen3_5_text", "qwen3_5", "llama"];

/// A decoder layer's mixer in a hybrid model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerType {
    /// softmax attention with a KV cache (`full_attention`)
    Full,
    /// Gated DeltaNet with conv + recurrent state (`linear_attention`)
    Linear,
}

/// What Qwen3.5 (Gated DeltaNet hybrid) adds to the dense fields.
#[derive(Clone, Debug, PartialEq)]
pub struct HybridConfig {
    pub layer_types: Vec<LayerType>,
    pub linear_num_key_heads: usize,
    pub linear_num_value_heads: usize,
    pub linear_key_head_dim: usize,
    pub linear_value_head_dim: usize,
    pub linear_conv_kernel_dim: usize,
    /// RoPE'd dims of a full-attention head: head_dim * partial_rotary_factor
    pub rotary_dim: usize,
}

impl HybridConfig {
    /// Channels of the linear-attention conv: [q (nk*dk) | k (nk*dk) | v (nv*dv)].
    pub fn conv_dim(&self) -> usize {
        2 * self.linear_num_key_heads * self.linear_key_head_dim
            + self.linear_num_value_heads * self.linear_value_head_dim
    }
    pub fn value_dim(&self) -> usize {
        self.linear_num_value_heads * self.linear_value_head_dim
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub model_type: String,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f32,
    pub rope_theta: f64,
    pub vocab_size: usize,
    pub max_position_embeddings: usize,
    pub tie_word_embeddings: bool,
    pub eos_token_ids: Vec<u32>,
    pub bos_token_id: Option<u32>,
    /// Per-head RMSNorm on q and k before RoPE (Qwen3 yes, Llama no).
    pub qk_norm: bool,
    /// Llama 3.x RoPE scaling; None is plain RoPE.
    pub rope_scaling: Option<Llama3Rope>,
    /// Qwen3.5's layer types and linear-attention dims; None for dense models (qwen3).
    pub hybrid: Option<HybridConfig>,
}

/// The decoder's dims as the forwards and the weight lists read them: hidden D, MLP F, query and
/// KV heads, head dim, vocabulary.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub d: usize,
    pub f: usize,
    pub hq: usize,
    pub hkv: usize,
    pub dh: usize,
    pub v: usize,
}

impl Config {
    pub fn dims(&self) -> Dims {
        Dims {
            d: self.hidden_size,
            f: self.intermediate_size,
            hq: self.num_attention_heads,
            hkv: self.num_key_value_heads,
            dh: self.head_dim,
            v: self.vocab_size,
        }
    }
}

struct Fields<'a> {
    v: &'a Value,
    path: String,
}

impl Fields<'_> {
    fn err(&self, field: &str, detail: &str) -> Error {
        Error::File {
            path: self.path.clone(),
            detail: format!("field `{field}`: {detail}"),
        }
    }
    fn usize(&self, field: &str) -> Result<usize> {
        match self.v.get(field) {
            None => Err(self.err(field, "missing")),
            Some(x) => x
                .as_u64()
                .filter(|&n| n > 0)
                .map(|n| n as usize)
                .ok_or_else(|| self.err(field, &format!("expected a positive integer, got {x}"))),
        }
    }
    fn opt_usize(&self, field: &str) -> Result<Option<usize>> {
        match self.v.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.usize(field).map(Some),
        }
    }
    fn f64(&self, field: &str) -> Result<f64> {
        match self.v.get(field) {
            None => Err(self.err(field, "missing")),
            Some(x) => x
                .as_f64()
                .filter(|f| f.is_finite() && *f > 0.0)
                .ok_or_else(|| self.err(field, &format!("expected a positive number, got {x}"))),
        }
    }
    fn id(x: &Value) -> Option<u32> {
        x.as_u64().and_then(|x| u32::try_from(x).ok())
    }
    fn ids(&self, field: &str) -> Result<Vec<u32>> {
        match self.v.get(field) {
            None | Some(Value::Null) => Ok(vec![]),
            // u32::try_from: an id past u32 is refused, not wrapped onto another token
            Some(x @ Value::Number(_)) => Self::id(x)
                .map(|x| vec![x])
                .ok_or_else(|| self.err(field, &format!("expected a token id, got {x}"))),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| Self::id(x).ok_or_else(|| self.err(field, &format!("expected token ids, got {x}"))))
                .collect(),
            Some(x) => Err(self.err(field, &format!("expected a token id or a list, got {x}"))),
        }
    }
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Config> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::File {
            path: p.clone(),
            detail: e.to_string(),
        })?;
        Self::parse(&text, &p)
    }

    /// `parse` over a file's bytes (`path` names it): UTF-8 checked first.
    pub fn parse_bytes(bytes: &[u8], path: &Path) -> Result<Config> {
        let p = path.display().to_string();
        let text = std::str::from_utf8(bytes).map_err(|e| Error::File {
            path: p.clone(),
            detail: format!("not UTF-8: {e}"),
        })?;
        Self::parse(text, &p)
    }

    pub fn parse(text: &str, path: &str) -> Result<Config> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error::File {
            path: path.into(),
            detail: format!("not valid JSON: {e}"),
        })?;
        if !v.is_object() {
            return Err(Error::File {
                path: path.into(),
                detail: "expected a JSON object".into(),
            });
        }
        let top = Fields {
            v: &v,
            path: path.into(),
        };
        let model_type = v
            .get("model_type")
            .and_then(|x| x.as_str())
            .ok_or_else(|| top.err("model_type", "missing or not a string"))?
            .to_string();
        if !KNOWN_MODEL_TYPES.contains(&model_type.as_str()) {
            return Err(top.err(
                "model_type",
                &format!(
                    "unknown architecture `{model_type}` (this build knows: {})",
                    KNOWN_MODEL_TYPES.join(", ")
                ),
            ));
        }
        // the vision-language wrapper: the text model's fields live in text_config
        let text = if model_type == "qwen3_5" {
            let tc = v
                .get("text_config")
                .filter(|t| t.is_object())
                .ok_or_else(|| top.err("text_config", "missing or not an object (model_type qwen3_5)"))?;
            if let Some(mt) = tc.get("model_type").filter(|m| m.as_str() != Some("qwen3_5_text")) {
                return Err(top.err(
                    "text_config.model_type",
                    &format!("expected \"qwen3_5_text\", got {mt}"),
                ));
            }
            tc
        } else {
            &v
        };
        let f = Fields {
            v: text,
            path: if model_type == "qwen3_5" {
                format!("{path} (text_config)")
            } else {
                path.into()
            },
        };
        let v = text;
        let hidden_size = f.usize("hidden_size")?;
        let num_attention_heads = f.usize("num_attention_heads")?;
        let num_key_value_heads = f.opt_usize("num_key_value_heads")?.unwrap_or(num_attention_heads);
        if num_attention_heads % num_key_value_heads != 0 {
            return Err(f.err(
                "num_key_value_heads",
                &format!("{num_key_value_heads} does not divide num_attention_heads {num_attention_heads}"),
            ));
        }
        let head_dim = f.opt_usize("head_dim")?.unwrap_or(hidden_size / num_attention_heads);
        // rope_theta: top level (older configs) or inside rope_parameters (transformers 5)
        let rope_theta = if v.get("rope_theta").is_some() {
            f.f64("rope_theta")?
        } else if let Some(rp) = v.get("rope_parameters") {
            Fields {
                v: rp,
                path: format!("{path} (rope_parameters)"),
            }
            .f64("rope_theta")?
        } else {
            return Err(f.err("rope_theta", "missing (looked at the top level and in rope_parameters)"));
        };
        let eps = f.f64("rms_norm_eps")?;
        // the text config's own value, else the wrapper's
        let tie_of = |fl: &Fields| -> Result<Option<bool>> {
            match fl.v.get("tie_word_embeddings") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Bool(b)) => Ok(Some(*b)),
                Some(x) => Err(fl.err("tie_word_embeddings", &format!("expected true or false, got {x}"))),
            }
        };
        let tie = tie_of(&f)?.or(tie_of(&top)?).unwrap_or(false);
        let mut eos_token_ids = f.ids("eos_token_id")?;
        if eos_token_ids.is_empty() {
            eos_token_ids = top.ids("eos_token_id")?;
        }
        let num_hidden_layers = f.usize("num_hidden_layers")?;
        let hybrid = if model_type == "qwen3" || model_type == "llama" {
            None
        } else {
            Some(hybrid(&f, num_hidden_layers, head_dim)?)
        };
        super::config_check::refuse_unimplemented(v, &model_type, &|field, d| f.err(field, d))?;
        let rope_scaling = rope_scaling(&f, path)?;
        let c = Config {
            qk_norm: model_type != "llama",
            model_type,
            hidden_size,
            intermediate_size: f.usize("intermediate_size")?,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps: eps as f32,
            rope_theta,
            vocab_size: f.usize("vocab_size")?,
            max_position_embeddings: f.opt_usize("max_position_embeddings")?.unwrap_or(32768),
            tie_word_embeddings: tie,
            eos_token_ids,
            bos_token_id: f.ids("bos_token_id")?.first().copied(),
            rope_scaling,
            hybrid,
        };
        c.validate(&f.path, &|field| format!("field `{field}`"))?;
        Ok(c)
    }
}

/// rope_scaling (or transformers 5's rope_parameters): "default" / absent, or "llama3". Other
/// scalings (linear, yarn, dynamic ...) are refused by name rather than run wrongly.
fn rope_scaling(f: &Fields, path: &str) -> Result<Option<Llama3Rope>> {
    let rs = match f
        .v
        .get("rope_scaling")
        .filter(|x| !x.is_null())
        .or(f.v.get("rope_parameters"))
    {
        None | Some(Value::Null) => return Ok(None),
        Some(x) => x,
    };
    let kind = rs
        .get("rope_type")
        .or(rs.get("type"))
        .and_then(|t| t.as_str())
        .unwrap_or("default");
    match kind {
        "default" => Ok(None),
        "llama3" => {
            let g = Fields {
                v: rs,
                path: format!("{path} (rope_scaling)"),
            };
            let r = Llama3Rope {
                factor: g.f64("factor")?,
                low_freq_factor: g.f64("low_freq_factor")?,
                high_freq_factor: g.f64("high_freq_factor")?,
                original_max_position_embeddings: g.usize("original_max_position_embeddings")? as f64,
            };
            if r.high_freq_factor <= r.low_freq_factor {
                return Err(g.err("high_freq_factor", "must exceed low_freq_factor"));
            }
            Ok(Some(r))
        }
        other => Err(f.err(
            "rope_scaling",
            &format!("rope_type `{other}` is not implemented (known: default, llama3)"),
        )),
    }
}

/// Qwen3.5's fields: layer_types (or full_attention_interval), the linear-attention dims, the
/// partial rotary factor; the output-gated attention is required.
fn hybrid(f: &Fields, layers: usize, head_dim: usize) -> Result<HybridConfig> {
    let v = f.v;
    // bounded before the per-layer list below is built from it (a dense family checks its last
    // layer's tensor before building anything per layer: qwen3::Weights::load)
    if layers > super::config_check::MAX_LAYERS {
        return Err(f.err(
            "num_hidden_layers",
            &format!(
                "{layers} layers is past this build's limit of {} (a corrupt count?)",
                super::config_check::MAX_LAYERS
            ),
        ));
    }
    let layer_types = match v.get("layer_types") {
        Some(Value::Array(a)) => {
            if a.len() != layers {
                return Err(f.err(
                    "layer_types",
                    &format!("{} entries for num_hidden_layers {layers}", a.len()),
                ));
            }
            a.iter()
                .map(|x| match x.as_str() {
                    Some("linear_attention") => Ok(LayerType::Linear),
                    Some("full_attention") => Ok(LayerType::Full),
                    _ => Err(f.err(
                        "layer_types",
                        &format!("expected \"linear_attention\" or \"full_attention\", got {x}"),
                    )),
                })
                .collect::<Result<Vec<_>>>()?
        }
        None | Some(Value::Null) => {
            // transformers' default: every full_attention_interval-th layer is full attention
            let every = f.opt_usize("full_attention_interval")?.unwrap_or(4);
            (0..layers)
                .map(|i| {
                    if (i + 1) % every == 0 {
                        LayerType::Full
                    } else {
                        LayerType::Linear
                    }
                })
                .collect()
        }
        Some(x) => return Err(f.err("layer_types", &format!("expected a list, got {x}"))),
    };
    if let Some(g) = v.get("attn_output_gate") {
        if g.as_bool() != Some(true) {
            return Err(f.err(
                "attn_output_gate",
                &format!("only the output-gated attention of Qwen3.5 is implemented, got {g}"),
            ));
        }
    }
    let factor = match v
        .get("rope_parameters")
        .and_then(|rp| rp.get("partial_rotary_factor"))
        .or(v.get("partial_rotary_factor"))
    {
        None | Some(Value::Null) => 1.0,
        Some(x) => x.as_f64().filter(|p| *p > 0.0 && *p <= 1.0).ok_or_else(|| {
            f.err(
                "partial_rotary_factor",
                &format!("expected a number in (0, 1], got {x}"),
            )
        })?,
    };
    let rotary_dim = (head_dim as f64 * factor) as usize;
    if rotary_dim == 0 || rotary_dim % 2 != 0 {
        return Err(f.err(
            "partial_rotary_factor",
            &format!("{factor} of head_dim {head_dim} gives {rotary_dim} rotary dims (must be even and > 0)"),
        ));
    }
    let h = HybridConfig {
        layer_types,
        linear_num_key_heads: f.usize("linear_num_key_heads")?,
        linear_num_value_heads: f.usize("linear_num_value_heads")?,
        linear_key_head_dim: f.usize("linear_key_head_dim")?,
        linear_value_head_dim: f.usize("linear_value_head_dim")?,
        linear_conv_kernel_dim: f.usize("linear_conv_kernel_dim")?,
        rotary_dim,
    };
    if h.linear_num_value_heads % h.linear_num_key_heads != 0 {
        return Err(f.err(
            "linear_num_value_heads",
            &format!(
                "{} is not a multiple of linear_num_key_heads {}",
                h.linear_num_value_heads, h.linear_num_key_heads
            ),
        ));
    }
    if h.linear_conv_kernel_dim < 2 {
        return Err(f.err(
            "linear_conv_kernel_dim",
            &format!("{} must be at least 2", h.linear_conv_kernel_dim),
        ));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    const OK: &str = r#"{"model_type":"qwen3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
        "num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"rms_norm_eps":1e-6,
        "rope_parameters":{"rope_theta":1000000.0,"rope_type":"default"},"vocab_size":300,"eos_token_id":[1,2]}"#;
    #[test]
    fn parses_rope_parameters() {
        let c = Config::parse(OK, "config.json").unwrap();
        assert_eq!(c.rope_theta, 1e6);
        assert_eq!(c.eos_token_ids, vec![1, 2]);
    }
    #[test]
    fn unknown_architecture_is_named() {
        let e = Config::parse(&OK.replace("\"qwen3\"", "\"mamba9\""), "m/config.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m/config.json") && e.contains("model_type") && e.contains("mamba9"),
            "{e}"
        );
    }
    const Q35: &str = r#"{"model_type":"qwen3_5_text","hidden_size":128,"intermediate_size":256,"num_hidden_layers":4,
        "num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"rms_norm_eps":1e-6,"vocab_size":512,
        "layer_types":["linear_attention","linear_attention","linear_attention","full_attention"],
        "linear_num_key_heads":2,"linear_num_value_heads":4,"linear_key_head_dim":32,"linear_value_head_dim":32,
        "linear_conv_kernel_dim":4,"tie_word_embeddings":true,"eos_token_id":511,
        "rope_parameters":{"rope_theta":1e7,"partial_rotary_factor":0.25}}"#;
    #[test]
    fn qwen3_5_text_and_the_vl_wrapper() {
        let c = Config::parse(Q35, "config.json").unwrap();
        let h = c.hybrid.as_ref().unwrap();
        assert_eq!(h.rotary_dim, 16);
        assert_eq!(h.conv_dim(), 256);
        assert_eq!(h.layer_types[3], LayerType::Full);
        let vl = format!(
            r#"{{"model_type":"qwen3_5","tie_word_embeddings":true,"text_config":{}}}"#,
            Q35.replace("\"eos_token_id\":511", "\"eos_token_id\":[511]")
        );
        let c2 = Config::parse(&vl, "config.json").unwrap();
        assert_eq!(c2.hybrid, c.hybrid);
        assert_eq!(
            (c2.hidden_size, c2.eos_token_ids.clone(), c2.tie_word_embeddings),
            (128, vec![511], true)
        );
        // errors name the field, inside text_config for the wrapper
        let e = Config::parse(&vl.replace("\"linear_num_key_heads\":2,", ""), "m/config.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m/config.json") && e.contains("text_config") && e.contains("linear_num_key_heads"),
            "{e}"
        );
        let e = Config::parse(&Q35.replace("\"full_attention\"]", "\"mamba\"]"), "config.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("layer_types") && e.contains("mamba"), "{e}");
        let e = Config::parse(
            &Q35.replace("\"linear_num_value_heads\":4", "\"linear_num_value_heads\":3"),
            "config.json",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("linear_num_value_heads"), "{e}");
        let e = Config::parse(r#"{"model_type":"qwen3_5"}"#, "config.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("text_config"), "{e}");
    }
    #[test]
    fn llama_and_llama3_rope() {
        let l = OK.replace("\"qwen3\"", "\"llama\"");
        let c = Config::parse(&l, "config.json").unwrap();
        assert!(!c.qk_norm && c.rope_scaling.is_none() && c.hybrid.is_none());
        let l3 = l.replace(r#""rope_type":"default""#, r#""rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192"#);
        let c = Config::parse(&l3, "config.json").unwrap();
        let r = c.rope_scaling.clone().unwrap();
        assert_eq!(r.factor, 8.0);
        let inv = crate::op::rope_inv_freq(5e5, 128, Some(&r));
        let plain = crate::op::rope_inv_freq(5e5, 128, None);
        assert_eq!(inv[0], plain[0]);
        assert!((inv[63] - plain[63] / 8.0).abs() < 1e-18);
        let e = Config::parse(
            &l.replace(r#""rope_type":"default""#, r#""rope_type":"yarn""#),
            "config.json",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rope_scaling") && e.contains("yarn"), "{e}");
        let e = Config::parse(
            &l.replace("\"vocab_size\"", "\"attention_bias\":true,\"vocab_size\""),
            "config.json",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("attention_bias"), "{e}");
    }
    #[test]
    fn bad_field_is_named() {
        let e = Config::parse(
            &OK.replace("\"hidden_size\":64", "\"hidden_size\":\"x\""),
            "config.json",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("hidden_size"), "{e}");
        let e = Config::parse("{not json", "config.json").unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("JSON"), "{e}");
    }
}
