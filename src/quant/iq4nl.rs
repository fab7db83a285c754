//! IQ4_NL: 32-element blocks of 4-bit indices into a fixed non-linear table.
//!
//! `block_iq4_nl` (18 bytes): f16 `d`, 16 bytes `qs`; element `i < 16` is the low nibble of `qs[i]`,
//! element `16 + i` its high nibble (as q4_0). Value: `d * KVALUES[q]`.
use super::{f16_at, f16_le, signed_absmax};

/// The 16 non-linear levels (ggml's `kvalues_iq4nl`).
pub const KVALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

pub fn dequant_iq4_nl(b: &[u8], out: &mut [f32]) {
    let d = f16_at(&b[0..2]);
    let (lo, hi) = out.split_at_mut(16);
    for (i, &q) in b[2..18].iter().enumerate() {
        lo[i] = d * KVALUES[(q & 0x0F) as usize] as f32;
        hi[i] = d * KVALUES[(q >> 4) as usize] as f32;
    }
}

/// IQ4_NL by signed absmax (not ggml's scale search): `d = x[argmax|x|] / -127` (so the largest
/// value maps to the level -127), f16-rounded, then each element takes the level nearest to it
/// (the lower index on ties).
pub fn quant_iq4_nl(x: &[f32], out: &mut [u8]) {
    let max = signed_absmax(x);
    let d = f16_at(&f16_le(max / -127.0));
    out[0..2].copy_from_slice(&f16_le(d));
    out[2..18].fill(0);
    for (i, &v) in x.iter().enumerate() {
        let mut best = (f32::INFINITY, 0u8);
        for (k, &kv) in KVALUES.iter().enumerate() {
            let err = (v - d * kv as f32).abs();
            if err < best.0 {
                best = (err, k as u8);
            }
        }
        out[2 + i % 16] |= best.1 << (4 * (i / 16));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iq4_nl_table_and_nibbles() {
        let mut b = [0u8; 18];
        b[0..2].copy_from_slice(&0x3c00u16.to_le_bytes()); // d = 1
        b[2] = 0xF0;
        b[17] = 0x08;
        let mut y = [0f32; 32];
        dequant_iq4_nl(&b, &mut y);
        assert_eq!((y[0], y[16], y[15], y[31]), (-127.0, 113.0, 1.0, -127.0));
    }
}
