//! The contract of `Op::Sample` (shapes and dtypes), and the limit on its alternatives.
use super::TensorDesc;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::shape_str;

/// The most alternatives (top logprobs) a row may ask for: the kernel makes one pass over the row
/// for each, and the OpenAI API allows 20.
pub const MAX_TOP_LOGPROBS: usize = 64;

/// The largest vocabulary: V weights of at most 2^45 must sum below 2^64.
pub const MAX_SAMPLE_VOCAB: usize = crate::backend::cpu::sample::MAX_VOCAB;

pub(super) fn check_shapes(k: usize, i: &[TensorDesc], o: &[TensorDesc]) -> Result<()> {
    let bad = |detail: String| Err(Error::shape("sample", detail));
    for (t, d, what) in [
        (&i[0], DType::F32, "logits"),
        (&i[1], DType::F32, "params"),
        (&o[0], DType::U32, "ids"),
        (&o[1], DType::F32, "logprobs"),
    ] {
        if t.dtype != d {
            return bad(format!("{what} must be {d}, got {}", t.dtype));
        }
    }
    let s = &i[0].shape;
    if s.len() != 2 || s[1] == 0 || s[1] > MAX_SAMPLE_VOCAB {
        return bad(format!(
            "logits must be [R, V] with 1 <= V <= {MAX_SAMPLE_VOCAB}, got [{}]",
            shape_str(s)
        ));
    }
    let (r, v) = (s[0], s[1]);
    if k > MAX_TOP_LOGPROBS || k > v {
        return bad(format!(
            "k = {k} alternatives: at most {MAX_TOP_LOGPROBS} and at most V = {v}"
        ));
    }
    if i[1].shape != [r, 4] {
        return bad(format!("params must be [{r}, 4], got [{}]", shape_str(&i[1].shape)));
    }
    for (t, what) in [(&o[0], "ids"), (&o[1], "logprobs")] {
        if t.shape != [r, 1 + k] {
            return bad(format!(
                "{what} must be [{r}, {}], got [{}]",
                1 + k,
                shape_str(&t.shape)
            ));
        }
    }
    Ok(())
}
