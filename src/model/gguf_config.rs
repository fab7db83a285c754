//! A model config from a GGUF file's metadata (`<arch>.block_count`, `<arch>.embedding_length`,
//! ...), the same `Config` config.json gives. Llama and Qwen3 files; anything else is refused by
//! the `general.architecture` it names.
use super::config::Config;
use super::gguf::Gguf;
use crate::error::{Error, Result};

/// Architectures whose GGUF layout this build maps onto its models.
pub const GGUF_ARCHS: [&str; 2] = ["llama", "qwen3"];

pub fn config_from_gguf(g: &Gguf) -> Result<Config> {
    let path = g.path.display().to_string();
    let bad = |key: &str, detail: String| Error::File {
        path: path.clone(),
        detail: format!("metadata key `{key}`: {detail}"),
    };
    let arch = g.architecture()?.to_string();
    if !GGUF_ARCHS.contains(&arch.as_str()) {
        return Err(bad(
            "general.architecture",
            format!(
                "unknown architecture `{arch}` (this build runs GGUF files of: {})",
                GGUF_ARCHS.join(", ")
            ),
        ));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let pos = |k: &str| -> Result<usize> {
        let v = g.meta_u32(&key(k))? as usize;
        if v == 0 {
            Err(bad(&key(k), "must be positive".into()))
        } else {
            Ok(v)
        }
    };
    let opt = |k: &str| -> Result<Option<usize>> {
        if g.meta(&key(k)).is_some() {
            pos(k).map(Some)
        } else {
            Ok(None)
        }
    };
    let hidden_size = pos("embedding_length")?;
    let heads = pos("attention.head_count")?;
    let kv = opt("attention.head_count_kv")?.unwrap_or(heads);
    if heads % kv != 0 {
        return Err(bad(
            &key("attention.head_count_kv"),
            format!("{kv} does not divide attention.head_count {heads}"),
        ));
    }
    let head_dim = opt("attention.key_length")?.unwrap_or(hidden_size / heads);
    if let Some(r) = opt("rope.dimension_count")? {
        if r != head_dim {
            return Err(bad(
                &key("rope.dimension_count"),
                format!("{r} rotary dims for head_dim {head_dim}: partial rotary is not implemented for {arch}"),
            ));
        }
    }
    if let Some(v) = g.meta(&key("rope.scaling.type")) {
        if !matches!(v, super::gguf::Value::Str(s) if s == "none") {
            return Err(bad(
                &key("rope.scaling.type"),
                format!("RoPE scaling {v} is not implemented for GGUF files"),
            ));
        }
    }
    // Llama 3's RoPE scaling arrives as `rope_freqs.weight` (one divisor per frequency), applied
    // by qwen3::Weights::load through `rope_freq_factors`
    let rope_theta = match g.meta(&key("rope.freq_base")) {
        None => 10_000.0,
        Some(_) => g.meta_f32(&key("rope.freq_base"))? as f64,
    };
    if !(rope_theta.is_finite() && rope_theta > 0.0) {
        return Err(bad(
            &key("rope.freq_base"),
            format!("expected a positive number, got {rope_theta}"),
        ));
    }
    let eps = g.meta_f32(&key("attention.layer_norm_rms_epsilon"))?;
    if !(eps.is_finite() && eps > 0.0) {
        return Err(bad(
            &key("attention.layer_norm_rms_epsilon"),
            format!("expected a positive number, got {eps}"),
        ));
    }
    // vocab: the metadata key, else the tokenizer's token list, else the embedding's rows
    let vocab_size = match opt("vocab_size")? {
        Some(v) => v,
        None => match g.meta("tokenizer.ggml.tokens") {
            Some(super::gguf::Value::Array(a)) => a.len(),
            _ => g.get("token_embd.weight")?.0.shape[0],
        },
    };
    let id = |k: &str| -> Result<Option<u32>> {
        if g.meta(k).is_some() {
            g.meta_u32(k).map(Some)
        } else {
            Ok(None)
        }
    };
    let mut eos_token_ids: Vec<u32> = [id("tokenizer.ggml.eos_token_id")?, id("tokenizer.ggml.eot_token_id")?]
        .into_iter()
        .flatten()
        .collect();
    eos_token_ids.sort();
    eos_token_ids.dedup();
    let c = Config {
        model_type: arch.clone(),
        hidden_size,
        intermediate_size: pos("feed_forward_length")?,
        num_hidden_layers: pos("block_count")?,
        num_attention_heads: heads,
        num_key_value_heads: kv,
        head_dim,
        rms_norm_eps: eps,
        rope_theta,
        vocab_size,
        max_position_embeddings: opt("context_length")?.unwrap_or(4096),
        tie_word_embeddings: g.tensor("output.weight").is_none(),
        eos_token_ids,
        bos_token_id: id("tokenizer.ggml.bos_token_id")?,
        qk_norm: arch == "qwen3",
        rope_scaling: None,
        hybrid: None,
    };
    // the GGUF key each Config field comes from, for the error
    let gguf_key = |field: &str| -> String {
        let k = match field {
            "num_hidden_layers" => key("block_count"),
            "num_attention_heads" => key("attention.head_count"),
            "num_key_value_heads" => key("attention.head_count_kv"),
            "head_dim" => key("attention.key_length"),
            "intermediate_size" => key("feed_forward_length"),
            "vocab_size" => key("vocab_size"),
            "max_position_embeddings" => key("context_length"),
            "rms_norm_eps" => key("attention.layer_norm_rms_epsilon"),
            "rope_theta" => key("rope.freq_base"),
            "eos_token_id" => "tokenizer.ggml.eos_token_id".into(),
            "bos_token_id" => "tokenizer.ggml.bos_token_id".into(),
            f => f.into(),
        };
        format!("metadata key `{k}`")
    };
    c.validate(&path, &gguf_key)?;
    Ok(c)
}

/// `rope_freqs.weight` of a GGUF file: f32 [rotary_dim / 2], each a divisor of its frequency
/// (llama.cpp's form of Llama 3's RoPE scaling). None when the file has none.
pub fn rope_freq_factors(g: &Gguf, rotary_dim: usize) -> Result<Option<Vec<f64>>> {
    let Some(t) = g.tensor("rope_freqs.weight") else {
        return Ok(None);
    };
    let bad = |d: String| Error::File {
        path: g.path.display().to_string(),
        detail: format!("tensor `rope_freqs.weight`: {d}"),
    };
    if t.dtype != crate::dtype::DType::F32 || t.shape != [rotary_dim / 2] {
        return Err(bad(format!(
            "expected f32 [{}], got {} {:?}",
            rotary_dim / 2,
            t.dtype,
            t.shape
        )));
    }
    let (_, bytes) = g.get("rope_freqs.weight")?;
    let f: Vec<f64> = crate::dtype::DType::F32
        .decode_f32(bytes)
        .into_iter()
        .map(|v| v as f64)
        .collect();
    if let Some(v) = f.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
        return Err(bad(format!("factor {v} is not a positive number")));
    }
    Ok(Some(f))
}
