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
    Random { dtype: DType, seed: u64 },
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
}
