//! The legacy 32-element block types: Q8_0, Q4_0, Q4_1.
//!
//! Layouts (little endian, no padding):
//! - `block_q8_0` (34 bytes): f16 `d`, 32 x i8 `qs`; value `qs[i] * d`.
//! - `block_q4_0` (18 bytes): f16 `d`, 16 bytes `qs`; element `i < 16` is the low nibble of
//!   `qs[i]`, element `16 + i` its high nibble; value `d * (q - 8)`.
//! - `block_q4_1` (20 bytes): f16 `d`, f16 `m`, 16 bytes `qs` (nibbles as q4_0); value `d * q + m`.
//!
//! The quantizers are ggml's reference ones (as the `gguf` package writes them in numpy), matched
//! bit for bit: same f32 operations, same rounding, same tie rules.
use super::{f16_at, f16_le, signed_absmax};

pub fn dequant_q8_0(b: &[u8], out: &mut [f32]) {
    let d = f16_at(&b[0..2]);
    for (o, &q) in out.iter_mut().zip(&b[2..34]) {
        *o = (q as i8) as f32 * d;
    }
}

pub fn dequant_q4_0(b: &[u8], out: &mut [f32]) {
    let d = f16_at(&b[0..2]);
    let (lo, hi) = out.split_at_mut(16);
    for (i, &q) in b[2..18].iter().enumerate() {
        lo[i] = d * ((q & 0x0F) as i32 - 8) as f32;
        hi[i] = d * ((q >> 4) as i32 - 8) as f32;
    }
}

pub fn dequant_q4_1(b: &[u8], out: &mut [f32]) {
    let d = f16_at(&b[0..2]);
    let m = f16_at(&b[2..4]);
    let (lo, hi) = out.split_at_mut(16);
    for (i, &q) in b[4..20].iter().enumerate() {
        lo[i] = d * (q & 0x0F) as f32 + m;
        hi[i] = d * (q >> 4) as f32 + m;
    }
}

/// `1 / d`, or 0 where `d` is 0 (ggml's `id`).
#[inline]
fn inv(d: f32) -> f32 {
    if d == 0.0 {
        0.0
    } else {
        1.0 / d
    }
}

/// Packs 32 nibbles: element i (< 16) low, element 16 + i high.
#[inline]
fn pack_nibbles(q: &[u8; 32], out: &mut [u8]) {
    for i in 0..16 {
        out[i] = q[i] | (q[16 + i] << 4);
    }
}

/// Q8_0: `d = max|x| / 127`, `q = round_half_away(x / d)` (through `x * (1/d)`).
pub fn quant_q8_0(x: &[f32], out: &mut [u8]) {
    let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
    let d = amax / 127.0;
    let id = inv(d);
    out[0..2].copy_from_slice(&f16_le(d));
    for (o, &v) in out[2..34].iter_mut().zip(x) {
        // f32::round rounds half away from zero, as ggml's roundf.
        *o = ((v * id).round() as i8) as u8;
    }
}

/// Q4_0: `d = x[argmax|x|] / -8` (the first index on ties, sign kept), `q = min(15, trunc(x/d + 8.5))`.
pub fn quant_q4_0(x: &[f32], out: &mut [u8]) {
    let max = signed_absmax(x);
    let d = max / -8.0;
    let id = inv(d);
    out[0..2].copy_from_slice(&f16_le(d));
    let mut q = [0u8; 32];
    for (qi, &v) in q.iter_mut().zip(x) {
        *qi = ((v * id + 8.5).trunc() as u8).min(15);
    }
    pack_nibbles(&q, &mut out[2..18]);
}

/// Q4_1: `d = (max - min) / 15`, `m = min`, `q = min(15, trunc((x - min)/d + 0.5))`.
pub fn quant_q4_1(x: &[f32], out: &mut [u8]) {
    let max = x.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
    let min = x.iter().fold(f32::INFINITY, |a, &v| a.min(v));
    let d = (max - min) / 15.0;
    let id = inv(d);
    out[0..2].copy_from_slice(&f16_le(d));
    out[2..4].copy_from_slice(&f16_le(min));
    let mut q = [0u8; 32];
    for (qi, &v) in q.iter_mut().zip(x) {
        *qi = (((v - min) * id + 0.5).trunc() as u8).min(15);
    }
    pack_nibbles(&q, &mut out[4..20]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_0_nibble_order_and_offset() {
        // d = 1.0 (f16 0x3c00); qs[0] = 0x9F: element 0 = 15 - 8 = 7, element 16 = 9 - 8 = 1.
        let mut b = [0u8; 18];
        b[0..2].copy_from_slice(&0x3c00u16.to_le_bytes());
        b[2] = 0x9F;
        let mut out = [0f32; 32];
        dequant_q4_0(&b, &mut out);
        assert_eq!((out[0], out[16], out[1], out[17]), (7.0, 1.0, -8.0, -8.0));
    }

    #[test]
    fn q4_1_and_q8_0_by_hand() {
        let mut b = [0u8; 20];
        b[0..2].copy_from_slice(&0x4000u16.to_le_bytes()); // d = 2
        b[2..4].copy_from_slice(&0xbc00u16.to_le_bytes()); // m = -1
        b[4 + 15] = 0x3A;
        let mut out = [0f32; 32];
        dequant_q4_1(&b, &mut out);
        assert_eq!((out[0], out[15], out[31]), (-1.0, 19.0, 5.0));
        let mut b = [0u8; 34];
        b[0..2].copy_from_slice(&0x3800u16.to_le_bytes()); // d = 0.5
        b[2] = 0x81; // -127
        b[33] = 0x7f;
        dequant_q8_0(&b, &mut out);
        assert_eq!((out[0], out[31]), (-63.5, 63.5));
    }

    #[test]
    fn q4_0_uses_the_signed_max_and_first_tie() {
        let mut x = [0f32; 32];
        x[3] = -2.0;
        x[9] = 2.0;
        let mut b = [0u8; 18];
        quant_q4_0(&x, &mut b);
        // d = -2 / -8 = 0.25 (the first of the tied |max| is the negative one): x[3] -> q 0.
        assert_eq!(f16_at(&b[0..2]), 0.25);
        assert_eq!(b[2 + 3] & 0x0F, 0);
        assert_eq!(b[2 + 9] & 0x0F, 15); // trunc(8 + 8.5) = 16, clipped to 15
    }
}
