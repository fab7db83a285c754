//! Block-quantized weight types (GGUF layouts): CPU dequantization, the reference every quantized
//! kernel is checked against, and simple quantizers for test and benchmark weights.
use crate::dtype::DType;

/// Dequantizes whole blocks of `dt` to f32.
pub fn dequantize(dt: DType, bytes: &[u8]) -> Vec<f32> {
    let _ = (dt, bytes);
    unimplemented!("quant::dequantize: being written")
}

/// Quantizes `vals` (a whole number of blocks) to `dt`.
pub fn quantize(dt: DType, vals: &[f32]) -> Vec<u8> {
    let _ = (dt, vals);
    unimplemented!("quant::quantize: being written")
}
