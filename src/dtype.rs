//! Element types. 16-bit floats are stored as raw bits (little endian); the wgpu backend packs two
//! of them into one u32 word. Quantized block types (GGUF's Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, IQ4_NL)
//! are stored as their raw blocks, byte for byte as in the file; `block()` gives their geometry and
//! src/quant/ their CPU dequantization (the reference every quantized kernel is checked against).
use half::{bf16, f16};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F16,
    BF16,
    I32,
    U32,
    #[serde(rename = "q8_0")]
    Q8_0,
    #[serde(rename = "q4_0")]
    Q4_0,
    #[serde(rename = "q4_1")]
    Q4_1,
    #[serde(rename = "q4_k")]
    Q4K,
    #[serde(rename = "q6_k")]
    Q6K,
    #[serde(rename = "iq4_nl")]
    IQ4NL,
}

impl DType {
    pub const ALL: [DType; 5] = [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U32];
    pub const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];
    /// The block-quantized weight types (weights only: activations stay float).
    pub const QUANTS: [DType; 6] = [
        DType::Q8_0,
        DType::Q4_0,
        DType::Q4_1,
        DType::Q4K,
        DType::Q6K,
        DType::IQ4NL,
    ];

    /// Bytes per element of an unquantized dtype. A quantized type has no per-element size: callers
    /// that may see one use `nbytes`/`block` (this panics there, naming the caller's mistake).
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 => 2,
            q => panic!("DType::size() on the block-quantized type {q}: use nbytes()/block()"),
        }
    }
    /// (elements per block, bytes per block); (1, size) for unquantized types.
    pub fn block(self) -> (usize, usize) {
        match self {
            DType::Q8_0 => (32, 34),
            DType::Q4_0 => (32, 18),
            DType::Q4_1 => (32, 20),
            DType::Q4K => (256, 144),
            DType::Q6K => (256, 210),
            DType::IQ4NL => (32, 18),
            d => (1, d.size()),
        }
    }
    pub fn is_quant(self) -> bool {
        self.block().0 > 1
    }
    /// Bytes of `n` elements (for a quantized type `n` is a whole number of blocks; a partial block
    /// is counted whole).
    pub fn nbytes(self, n: usize) -> usize {
        let (be, bb) = self.block();
        n.div_ceil(be) * bb
    }
    /// The GGUF (ggml) type id of this dtype.
    pub fn ggml_type(self) -> u32 {
        match self {
            DType::F32 => 0,
            DType::F16 => 1,
            DType::Q4_0 => 2,
            DType::Q4_1 => 3,
            DType::Q8_0 => 8,
            DType::Q4K => 12,
            DType::Q6K => 14,
            DType::IQ4NL => 20,
            DType::I32 => 26,
            DType::BF16 => 30,
            DType::U32 => u32::MAX,
        }
    }
    /// The dtype of a GGUF (ggml) type id, if this build knows it.
    pub fn from_ggml_type(t: u32) -> Option<DType> {
        DType::ALL.into_iter().chain(DType::QUANTS).find(|d| d.ggml_type() == t)
    }
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::Q8_0 => "q8_0",
            DType::Q4_0 => "q4_0",
            DType::Q4_1 => "q4_1",
            DType::Q4K => "q4_k",
            DType::Q6K => "q6_k",
            DType::IQ4NL => "iq4_nl",
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL
            .into_iter()
            .chain(DType::QUANTS)
            .find(|d| d.name() == s.to_ascii_lowercase())
    }

    /// Decode `n` elements of this float dtype to f32 (exact: f16 and bf16 are subsets of f32); a
    /// quantized type is dequantized by the reference in src/quant/.
    pub fn decode_f32(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            q if q.is_quant() => crate::quant::dequantize(q, bytes),
            DType::F32 => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            DType::F16 => bytes
                .chunks_exact(2)
                .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
                .collect(),
            DType::BF16 => bytes
                .chunks_exact(2)
                .map(|c| bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
                .collect(),
            DType::I32 => bytes
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f32)
                .collect(),
            DType::U32 => bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as f32)
                .collect(),
            _ => unreachable!("quantized types are matched first"),
        }
    }

    /// Encode f32 values into this dtype, rounding to nearest even (the rule every backend follows);
    /// a quantized type is quantized by src/quant/ (whole blocks).
    pub fn encode_f32(self, vals: &[f32]) -> Vec<u8> {
        if self.is_quant() {
            return crate::quant::quantize(self, vals);
        }
        let mut out = Vec::with_capacity(vals.len() * self.size());
        match self {
            DType::F32 => vals.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            DType::F16 => vals
                .iter()
                .for_each(|v| out.extend_from_slice(&f16::from_f32(*v).to_bits().to_le_bytes())),
            DType::BF16 => vals
                .iter()
                .for_each(|v| out.extend_from_slice(&f32_to_bf16_bits(*v).to_le_bytes())),
            DType::I32 => vals
                .iter()
                .for_each(|v| out.extend_from_slice(&(*v as i32).to_le_bytes())),
            DType::U32 => vals
                .iter()
                .for_each(|v| out.extend_from_slice(&(*v as u32).to_le_bytes())),
            _ => unreachable!("quantized types return above"),
        }
        out
    }

    pub fn decode_u32(self, bytes: &[u8]) -> Vec<u32> {
        assert_eq!(self.size(), 4, "decode_u32 on {}", self.name());
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

/// f32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN with the sign kept.
/// The WGSL twin is `f32_to_bf16_bits` in shaders/common.wgsl.
pub fn f32_to_bf16_bits(v: f32) -> u16 {
    let b = v.to_bits();
    if (b & 0x7fff_ffff) > 0x7f80_0000 {
        return ((b >> 16) | 0x0040) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn bf16_rounding_matches_half() {
        for bits in [
            0x3f80_8000u32,
            0x3f81_8000,
            0x3f80_7fff,
            0x7f7f_ffff,
            0x0000_0001,
            0x8000_0000,
            0xff80_0000,
        ] {
            let v = f32::from_bits(bits);
            assert_eq!(f32_to_bf16_bits(v), bf16::from_f32(v).to_bits(), "bits {bits:#x}");
        }
    }
}
