//! config.json as Hugging Face writes it. Every error names the file and the field.
use crate::error::{Error, Result};
use serde_json::Value;
use std::path::Path;

/// The architectures this build knows. Anything else is refused by name.
pub const KNOWN_MODEL_TYPES: [&str; 1] = ["qwen3"];

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
}

struct Fields<'a> {
    v: &'a Value,
    path: String,
}

impl Fields<'_> {
    fn err(&self, field: &str, detail: &str) -> Error {
        Error::File { path: self.path.clone(), detail: format!("field `{field}`: {detail}") }
    }
    fn usize(&self, field: &str) -> Result<usize> {
        match self.v.get(field) {
            None => Err(self.err(field, "missing")),
            Some(x) => x.as_u64().filter(|&n| n > 0).map(|n| n as usize).ok_or_else(|| self.err(field, &format!("expected a positive integer, got {x}"))),
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
            Some(x) => x.as_f64().filter(|f| f.is_finite() && *f > 0.0).ok_or_else(|| self.err(field, &format!("expected a positive number, got {x}"))),
        }
    }
    fn id(x: &Value) -> Option<u32> {
        x.as_u64().and_then(|x| u32::try_from(x).ok())
    }
    fn ids(&self, field: &str) -> Result<Vec<u32>> {
        match self.v.get(field) {
            None | Some(Value::Null) => Ok(vec![]),
            // u32::try_from: an id past u32 is refused, not wrapped onto another token
            Some(x @ Value::Number(_)) => Self::id(x).map(|x| vec![x]).ok_or_else(|| self.err(field, &format!("expected a token id, got {x}"))),
            Some(Value::Array(a)) => a.iter().map(|x| Self::id(x).ok_or_else(|| self.err(field, &format!("expected token ids, got {x}")))).collect(),
            Some(x) => Err(self.err(field, &format!("expected a token id or a list, got {x}"))),
        }
    }
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Config> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::File { path: p.clone(), detail: e.to_string() })?;
        Self::parse(&text, &p)
    }

    pub fn parse(text: &str, path: &str) -> Result<Config> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error::File { path: path.into(), detail: format!("not valid JSON: {e}") })?;
        if !v.is_object() {
            return Err(Error::File { path: path.into(), detail: "expected a JSON object".into() });
        }
        let f = Fields { v: &v, path: path.into() };
        let model_type = v.get("model_type").and_then(|x| x.as_str()).ok_or_else(|| f.err("model_type", "missing or not a string"))?.to_string();
        if !KNOWN_MODEL_TYPES.contains(&model_type.as_str()) {
            return Err(f.err("model_type", &format!("unknown architecture `{model_type}` (this build knows: {})", KNOWN_MODEL_TYPES.join(", "))));
        }
        let hidden_size = f.usize("hidden_size")?;
        let num_attention_heads = f.usize("num_attention_heads")?;
        let num_key_value_heads = f.opt_usize("num_key_value_heads")?.unwrap_or(num_attention_heads);
        if num_attention_heads % num_key_value_heads != 0 {
            return Err(f.err("num_key_value_heads", &format!("{num_key_value_heads} does not divide num_attention_heads {num_attention_heads}")));
        }
        let head_dim = f.opt_usize("head_dim")?.unwrap_or(hidden_size / num_attention_heads);
        // rope_theta: top level (older configs) or inside rope_parameters (transformers 5)
        let rope_theta = if v.get("rope_theta").is_some() {
            f.f64("rope_theta")?
        } else if let Some(rp) = v.get("rope_parameters") {
            Fields { v: rp, path: format!("{path} (rope_parameters)") }.f64("rope_theta")?
        } else {
            return Err(f.err("rope_theta", "missing (looked at the top level and in rope_parameters)"));
        };
        let eps = f.f64("rms_norm_eps")?;
        let tie = match v.get("tie_word_embeddings") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(x) => return Err(f.err("tie_word_embeddings", &format!("expected true or false, got {x}"))),
        };
        Ok(Config {
            model_type,
            hidden_size,
            intermediate_size: f.usize("intermediate_size")?,
            num_hidden_layers: f.usize("num_hidden_layers")?,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps: eps as f32,
            rope_theta,
            vocab_size: f.usize("vocab_size")?,
            max_position_embeddings: f.opt_usize("max_position_embeddings")?.unwrap_or(32768),
            tie_word_embeddings: tie,
            eos_token_ids: f.ids("eos_token_id")?,
            bos_token_id: f.ids("bos_token_id")?.first().copied(),
        })
    }
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
        let e = Config::parse(&OK.replace("\"qwen3\"", "\"mamba9\""), "m/config.json").unwrap_err().to_string();
        assert!(e.contains("m/config.json") && e.contains("model_type") && e.contains("mamba9"), "{e}");
    }
    #[test]
    fn bad_field_is_named() {
        let e = Config::parse(&OK.replace("\"hidden_size\":64", "\"hidden_size\":\"x\""), "config.json").unwrap_err().to_string();
        assert!(e.contains("hidden_size"), "{e}");
        let e = Config::parse("{not json", "config.json").unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("JSON"), "{e}");
    }
}
