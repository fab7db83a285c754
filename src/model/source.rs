//! Where weights come from: a safetensors checkpoint, a GGUF file (names mapped to the Hugging Face
//! ones, Llama's q/k rows put back in Hugging Face order), or random weights of a named shape.
use super::config::Config;
use super::gguf::Gguf;
use super::safetensors::SafeTensors;
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::borrow::Cow;

pub enum Source<'a> {
    File(&'a SafeTensors),
    Gguf(&'a Gguf),
    Random { dtype: DType, seed: u64, mix: Mix },
}

/// Which matrices of a random source take which type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Every matrix in the source's one dtype
    Uniform,
    /// What llama.cpp's llama-quantize makes of a Llama-layout model as q4_k_m: q4_k, but q6_k
    /// for the output matrix (the embedding where tied) and, in the layers its `use_more_bits`
    /// picks (the first and last eighth and every third between), attn_v and ffn_down. Half of a
    /// 28-layer model's layers then hold q/k and v in different types, as users' q4_k_m files do.
    Q4KM,
}

impl Mix {
    /// The dtype of matrix `name` under this mix, `base` the source's dtype.
    pub fn dtype(self, c: &Config, name: &str, base: DType) -> DType {
        if self == Mix::Uniform {
            return base;
        }
        let output = name == "lm_head.weight" || (c.tie_word_embeddings && name == "model.embed_tokens.weight");
        let more_bits = |i: usize| {
            let n = c.num_hidden_layers;
            i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
        };
        let layer = name
            .strip_prefix("model.layers.")
            .and_then(|r| r.split_once('.'))
            .and_then(|(i, rest)| Some((i.parse::<usize>().ok()?, rest)));
        let wider = match layer {
            Some((i, "self_attn.v_proj.weight" | "mlp.down_proj.weight")) => more_bits(i),
            _ => output,
        };
        if wider {
            DType::Q6K
        } else {
            DType::Q4K
        }
    }
}

/// One stored tensor: its dtype, row-major shape, bytes (borrowed from the mmap unless rows had to
/// be reordered) and the file it came from (for messages).
pub struct Fetched<'a> {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub bytes: Cow<'a, [u8]>,
    pub path: String,
}

/// The GGUF name of a Hugging Face tensor name (Llama / Qwen3 layout), and the number of heads
/// whose rows llama.cpp's converter interleaved (q and k of a Llama model).
pub fn gguf_name(c: &Config, hf: &str) -> Option<(String, Option<usize>)> {
    let fixed = match hf {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        "lm_head.weight" => Some("output.weight"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some((f.to_string(), None));
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (layer, suffix) = rest.split_once('.')?;
    let llama = c.model_type == "llama";
    let (g, heads) = match suffix {
        "input_layernorm.weight" => ("attn_norm", None),
        "self_attn.q_proj.weight" => ("attn_q", llama.then_some(c.num_attention_heads)),
        "self_attn.k_proj.weight" => ("attn_k", llama.then_some(c.num_key_value_heads)),
        "self_attn.v_proj.weight" => ("attn_v", None),
        "self_attn.o_proj.weight" => ("attn_output", None),
        "self_attn.q_norm.weight" => ("attn_q_norm", None),
        "self_attn.k_norm.weight" => ("attn_k_norm", None),
        "post_attention_layernorm.weight" => ("ffn_norm", None),
        "mlp.gate_proj.weight" => ("ffn_gate", None),
        "mlp.up_proj.weight" => ("ffn_up", None),
        "mlp.down_proj.weight" => ("ffn_down", None),
        _ => return None,
    };
    Some((format!("blk.{layer}.{g}.weight"), heads))
}

/// llama.cpp's converter stores each head's q/k rows as (half, 2) interleaved pairs so that its
/// adjacent-pair RoPE applies; Hugging Face's RoPE rotates halves. Row 2j+s of a head (GGUF) is
/// row s*half+j (Hugging Face). Whole rows move, so quantized rows move as they are.
pub fn unpermute_rows(bytes: &[u8], rows: usize, heads: usize) -> Option<Vec<u8>> {
    if heads == 0 || rows % heads != 0 || (rows / heads) % 2 != 0 || bytes.len() % rows != 0 {
        return None;
    }
    let (hd, rb) = (rows / heads, bytes.len() / rows);
    let half = hd / 2;
    let mut out = Vec::with_capacity(bytes.len());
    for h in 0..heads {
        for r in 0..hd {
            let (s, j) = (r / half, r % half);
            let src = h * hd + 2 * j + s;
            out.extend_from_slice(&bytes[src * rb..(src + 1) * rb]);
        }
    }
    Some(out)
}

impl<'a> Source<'a> {
    /// Whether `name` is stored (random sources hold everything).
    pub fn has(&self, c: &Config, name: &str) -> bool {
        match self {
            Source::File(st) => st.tensors.contains_key(name),
            Source::Gguf(g) => gguf_name(c, name).is_some_and(|(n, _)| g.get(&n).is_ok()),
            Source::Random { .. } => true,
        }
    }

    /// The dtype, row-major shape and file of the stored tensor `name`, without touching its bytes
    /// (validation before any upload). Not for random sources.
    pub fn info(&self, c: &Config, name: &str) -> Result<(DType, Vec<usize>, String)> {
        match self {
            Source::File(st) => {
                let (info, _) = st.get(name)?;
                Ok((info.dtype, info.shape.clone(), st.path_of(name)))
            }
            Source::Gguf(g) => {
                let path = g.path.display().to_string();
                let (gname, _) = gguf_name(c, name).ok_or_else(|| Error::File {
                    path: path.clone(),
                    detail: format!("no GGUF tensor name known for `{name}`"),
                })?;
                let (info, _) = g.get(&gname)?;
                Ok((info.dtype, info.shape.clone(), format!("{path} (tensor `{gname}`)")))
            }
            Source::Random { .. } => Err(Error::Other(format!("info `{name}` from a random source"))),
        }
    }

    /// The stored tensor `name` (a Hugging Face name). Not for random sources.
    pub fn fetch(&self, c: &Config, name: &str) -> Result<Fetched<'a>> {
        match self {
            Source::File(st) => {
                let (info, bytes) = st.get(name)?;
                Ok(Fetched {
                    dtype: info.dtype,
                    shape: info.shape.clone(),
                    bytes: Cow::Borrowed(bytes),
                    path: st.path_of(name),
                })
            }
            Source::Gguf(g) => {
                let path = g.path.display().to_string();
                let (gname, heads) = gguf_name(c, name).ok_or_else(|| Error::File {
                    path: path.clone(),
                    detail: format!("no GGUF tensor name known for `{name}`"),
                })?;
                let (info, bytes) = g.get(&gname)?;
                let bytes = match heads {
                    None => Cow::Borrowed(bytes),
                    Some(h) => Cow::Owned(unpermute_rows(bytes, info.shape[0], h).ok_or_else(|| Error::File {
                        path: path.clone(),
                        detail: format!(
                            "tensor `{gname}`: {} rows do not split into {h} heads of pairs",
                            info.shape[0]
                        ),
                    })?),
                };
                Ok(Fetched {
                    dtype: info.dtype,
                    shape: info.shape.clone(),
                    bytes,
                    path: format!("{path} (tensor `{gname}`)"),
                })
            }
            Source::Random { .. } => Err(Error::Other(format!("fetch `{name}` from a random source"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn unpermute_puts_halves_back() {
        // one head of 4 rows, 1 byte each: GGUF order [r0, r2, r1, r3] -> HF [r0, r1, r2, r3]
        assert_eq!(unpermute_rows(&[0, 2, 1, 3], 4, 1).unwrap(), vec![0, 1, 2, 3]);
        // two heads of 4 rows, 2 bytes per row
        let g: Vec<u8> = [0, 2, 1, 3, 4, 6, 5, 7].iter().flat_map(|&r| [r, r]).collect();
        let hf: Vec<u8> = (0..8u8).flat_map(|r| [r, r]).collect();
        assert_eq!(unpermute_rows(&g, 8, 2).unwrap(), hf);
        assert!(unpermute_rows(&[0; 6], 6, 2).is_none());
    }

    #[test]
    fn q4_k_m_mix_keeps_llama_cpps_q6_k_layers() {
        // Qwen3-0.6B's 28 layers: llama.cpp's q4_k_m file holds attn_v and ffn_down in q6_k in
        // these 14 (its tensors 390.8 MB)
        let c = crate::model::shapes::shape("qwen3-0.6b").unwrap();
        let wide: Vec<usize> = (0..28)
            .filter(|i| {
                Mix::Q4KM.dtype(&c, &format!("model.layers.{i}.self_attn.v_proj.weight"), DType::Q4K) == DType::Q6K
            })
            .collect();
        assert_eq!(wide, [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27]);
        for i in 0..28 {
            let down = Mix::Q4KM.dtype(&c, &format!("model.layers.{i}.mlp.down_proj.weight"), DType::Q4K);
            assert_eq!(down == DType::Q6K, wide.contains(&i), "layer {i} down");
            for m in [
                "self_attn.q_proj",
                "self_attn.k_proj",
                "self_attn.o_proj",
                "mlp.gate_proj",
                "mlp.up_proj",
            ] {
                let d = Mix::Q4KM.dtype(&c, &format!("model.layers.{i}.{m}.weight"), DType::Q4K);
                assert_eq!(d, DType::Q4K, "layer {i} {m}");
            }
        }
        // tied: the embedding is the output matrix
        assert_eq!(Mix::Q4KM.dtype(&c, "model.embed_tokens.weight", DType::Q4K), DType::Q6K);
        assert_eq!(
            Mix::Uniform.dtype(&c, "model.embed_tokens.weight", DType::Q8_0),
            DType::Q8_0
        );
    }
}
