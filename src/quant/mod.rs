//! Block-quantized weight types (GGUF layouts): CPU dequantization, the reference every quantized
//! kernel is checked against, and simple quantizers for test and benchmark weights.
//!
//! Families: `legacy` (Q8_0, Q4_0, Q4_1), `kquant` (Q4_K, Q6_K), `iq4nl` (IQ4_NL), `random` (valid
//! random blocks for kernel parity tests and benchmarks).
//!
//! Dequantization is bit-exact against the `gguf` Python package's numpy dequantizers (goldens
//! under `goldens/quant-<type>/`, checked by tests/quant.rs): every value is computed with the same
//! f32 operations in the same order (f16 -> f32 is exact; products and sums are single f32
//! operations, never fused). Per element:
//!
//! | type   | value |
//! |--------|-------|
//! | q8_0   | `q * d` (q: i8) |
//! | q4_0   | `d * (q - 8)` (q: nibble; low nibbles are elements 0..16, high 16..32) |
//! | q4_1   | `d * q + m` |
//! | q4_k   | `(d * sc) * q - (dmin * m)` (sc, m: 6-bit per 32 elements) |
//! | q6_k   | `(d * sc) * (q - 32)` (q: 6 bits from ql + qh, sc: i8 per 16 elements) |
//! | iq4_nl | `d * KVALUES[q]` |
use crate::dtype::DType;
use half::f16;

pub mod iq4nl;
pub mod kquant;
pub mod legacy;
pub mod random;

pub use random::random_blocks;

/// Reads the little-endian f16 at `b[0..2]` as f32 (exact).
#[inline]
pub(crate) fn f16_at(b: &[u8]) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32()
}

/// f32 -> f16 bits (round to nearest even, as numpy's `astype(np.float16)`), little endian.
#[inline]
pub(crate) fn f16_le(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_bits().to_le_bytes()
}

/// Dequantizes one block of `dt`: `block` is exactly `dt.block().1` bytes and `out` exactly
/// `dt.block().0` elements (panics otherwise, naming the type and the lengths).
pub fn dequant_block(dt: DType, block: &[u8], out: &mut [f32]) {
    let (be, bb) = dt.block();
    assert!(dt.is_quant(), "quant::dequant_block on the unquantized type {dt}");
    assert!(
        block.len() == bb && out.len() == be,
        "quant::dequant_block({dt}): block of {} bytes (want {bb}), out of {} (want {be})",
        block.len(),
        out.len()
    );
    match dt {
        DType::Q8_0 => legacy::dequant_q8_0(block, out),
        DType::Q4_0 => legacy::dequant_q4_0(block, out),
        DType::Q4_1 => legacy::dequant_q4_1(block, out),
        DType::Q4K => kquant::dequant_q4_k(block, out),
        DType::Q6K => kquant::dequant_q6_k(block, out),
        DType::IQ4NL => iq4nl::dequant_iq4_nl(block, out),
        _ => unreachable!("checked is_quant above"),
    }
}

/// Dequantizes the whole blocks of `dt` in `bytes` to f32. A trailing partial block (a length that
/// is not a multiple of the block size in bytes) is ignored: only whole blocks are decoded, so the
/// result has `bytes.len() / block_bytes * block_elems` values.
pub fn dequantize(dt: DType, bytes: &[u8]) -> Vec<f32> {
    let (be, bb) = dt.block();
    assert!(dt.is_quant(), "quant::dequantize on the unquantized type {dt}");
    let n = bytes.len() / bb;
    let mut out = vec![0f32; n * be];
    for (blk, o) in bytes.chunks_exact(bb).zip(out.chunks_exact_mut(be)) {
        dequant_block(dt, blk, o);
    }
    out
}

/// Quantizes `vals` to `dt`, block by block. A length that is not a whole number of blocks is
/// padded with zeros up to the next block. Q8_0, Q4_0 and Q4_1 match the `gguf` package's
/// quantizers bit for bit (ggml's reference rounding); Q4_K, Q6_K and IQ4_NL use plain
/// round-to-nearest min/max or absmax quantizers (valid blocks, not ggml's search-based ones).
pub fn quantize(dt: DType, vals: &[f32]) -> Vec<u8> {
    let (be, bb) = dt.block();
    assert!(dt.is_quant(), "quant::quantize on the unquantized type {dt}");
    let nblk = vals.len().div_ceil(be);
    let mut out = vec![0u8; nblk * bb];
    let mut pad = vec![0f32; be];
    for (i, o) in out.chunks_exact_mut(bb).enumerate() {
        let src = &vals[i * be..vals.len().min((i + 1) * be)];
        let x: &[f32] = if src.len() == be {
            src
        } else {
            pad[..src.len()].copy_from_slice(src);
            pad[src.len()..].fill(0.0);
            &pad
        };
        quant_block(dt, x, o);
    }
    out
}

/// Quantizes one block: `x` is `dt.block().0` values, `out` `dt.block().1` bytes.
pub fn quant_block(dt: DType, x: &[f32], out: &mut [u8]) {
    let (be, bb) = dt.block();
    assert!(
        x.len() == be && out.len() == bb,
        "quant::quant_block({dt}): {} values (want {be}), out of {} bytes (want {bb})",
        x.len(),
        out.len()
    );
    match dt {
        DType::Q8_0 => legacy::quant_q8_0(x, out),
        DType::Q4_0 => legacy::quant_q4_0(x, out),
        DType::Q4_1 => legacy::quant_q4_1(x, out),
        DType::Q4K => kquant::quant_q4_k(x, out),
        DType::Q6K => kquant::quant_q6_k(x, out),
        DType::IQ4NL => iq4nl::quant_iq4_nl(x, out),
        _ => panic!("quant::quant_block on the unquantized type {dt}"),
    }
}

/// The element of largest magnitude, sign kept (the first on ties): the scale rule of the
/// absmax quantizers (gguf's, for the legacy types).
pub(crate) fn signed_absmax(x: &[f32]) -> f32 {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_blocks_decode_whole_blocks_only() {
        for dt in DType::QUANTS {
            let (be, bb) = dt.block();
            let b = random_blocks(dt, 3 * be, 7);
            assert_eq!(b.len(), 3 * bb, "{dt}");
            assert_eq!(dequantize(dt, &b[..2 * bb + bb / 2]).len(), 2 * be, "{dt}");
            assert_eq!(dequantize(dt, &b[..bb - 1]).len(), 0, "{dt}");
            assert_eq!(dequantize(dt, &b[..2 * bb]), dequantize(dt, &b)[..2 * be], "{dt}");
        }
    }

    #[test]
    fn quantize_pads_the_last_block_with_zeros() {
        for dt in DType::QUANTS {
            let (be, bb) = dt.block();
            let v: Vec<f32> = (0..be + 5).map(|i| ((i as f32) * 0.37).sin()).collect();
            let q = quantize(dt, &v);
            assert_eq!(q.len(), 2 * bb, "{dt}");
            let mut padded = v.clone();
            padded.resize(2 * be, 0.0);
            assert_eq!(q, quantize(dt, &padded), "{dt}");
            assert!(quantize(dt, &[]).is_empty(), "{dt}");
        }
    }

    #[test]
    fn zero_blocks_dequantize_to_zero() {
        for dt in DType::QUANTS {
            let (be, _) = dt.block();
            let q = quantize(dt, &vec![0.0; 2 * be]);
            assert!(dequantize(dt, &q).iter().all(|v| *v == 0.0), "{dt}");
        }
    }
}
