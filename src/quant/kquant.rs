//! The k-quant 256-element super-block types: Q4_K and Q6_K.
//!
//! `block_q4_K` (144 bytes): f16 `d`, f16 `dmin`, 12 bytes of packed 6-bit scales and mins for the
//! 8 sub-blocks of 32, 128 bytes `qs`. Sub-block `j` reads the bytes `qs[32*(j/2)..][..32]`: the low
//! nibbles for even `j`, the high nibbles for odd `j`. Scale/min packing (`s` = bytes 4..16):
//! for `j < 4`, `sc[j] = s[j] & 63`, `m[j] = s[4+j] & 63`; `sc[4+j] = (s[8+j] & 15) | (s[j] >> 6) << 4`,
//! `m[4+j] = (s[8+j] >> 4) | (s[4+j] >> 6) << 4`. Value: `(d * sc) * q - (dmin * m)`.
//!
//! `block_q6_K` (210 bytes): `ql[128]`, `qh[64]`, i8 `scales[16]`, f16 `d`. Each half `h` of 128
//! elements uses `ql[64h..][..64]` and `qh[32h..][..32]`: element `p` of the half takes its low four
//! bits from the low (`p < 64`) or high nibble of `ql[64h + p % 64]` and its top two from
//! `qh[32h + p % 32] >> (2 * (p / 32))`. Value: `(d * scales[e / 16]) * (q - 32)`.
use super::{f16_at, f16_le, signed_absmax};

/// The 6-bit (scale, min) of sub-block `j` of a Q4_K block's 12 packed bytes.
#[inline]
pub fn q4_k_scale_min(s: &[u8], j: usize) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[4 + j] & 63)
    } else {
        let k = j - 4;
        (
            (s[8 + k] & 15) | ((s[k] >> 2) & 0x30),
            (s[8 + k] >> 4) | ((s[4 + k] >> 2) & 0x30),
        )
    }
}

pub fn dequant_q4_k(b: &[u8], out: &mut [f32]) {
    let d = f16_at(&b[0..2]);
    let dmin = f16_at(&b[2..4]);
    let scales = &b[4..16];
    let qs = &b[16..144];
    for j in 0..8 {
        let (sc, m) = q4_k_scale_min(scales, j);
        let ds = d * sc as f32;
        let dm = dmin * m as f32;
        let bytes = &qs[32 * (j / 2)..32 * (j / 2) + 32];
        let shift = 4 * (j % 2);
        for (o, &q) in out[32 * j..32 * j + 32].iter_mut().zip(bytes) {
            *o = ds * ((q >> shift) & 0x0F) as f32 - dm;
        }
    }
}

pub fn dequant_q6_k(b: &[u8], out: &mut [f32]) {
    let (ql, qh, scales) = (&b[0..128], &b[128..192], &b[192..208]);
    let d = f16_at(&b[208..210]);
    for h in 0..2 {
        for p in 0..128 {
            let e = 128 * h + p;
            let lo = (ql[64 * h + p % 64] >> (4 * (p / 64))) & 0x0F;
            let hi = (qh[32 * h + p % 32] >> (2 * (p / 32))) & 0x03;
            let q = (lo | (hi << 4)) as i32 - 32;
            let ds = d * (scales[e / 16] as i8) as f32;
            out[e] = ds * q as f32;
        }
    }
}

#[inline]
fn round_clamp(v: f32, lo: i32, hi: i32) -> i32 {
    (v.round() as i32).clamp(lo, hi)
}

/// Q4_K by per-sub-block min/max (not ggml's search): sub-block scale `(max - min) / 15` and min
/// `-min(0, min)`, both quantized to 6 bits against the super-block's `d = max scale / 63` and
/// `dmin = max min / 63` (f16-rounded before use), then `q = round((x + dmin*m) / (d*sc))`.
pub fn quant_q4_k(x: &[f32], out: &mut [u8]) {
    let mut scale = [0f32; 8];
    let mut mins = [0f32; 8];
    for j in 0..8 {
        let sub = &x[32 * j..32 * j + 32];
        let mn = sub.iter().fold(0f32, |a, &v| a.min(v));
        let mx = sub.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
        scale[j] = (mx - mn) / 15.0;
        mins[j] = -mn;
    }
    let d = f16_at(&f16_le(scale.iter().fold(0f32, |a, &v| a.max(v)) / 63.0));
    let dmin = f16_at(&f16_le(mins.iter().fold(0f32, |a, &v| a.max(v)) / 63.0));
    out[0..2].copy_from_slice(&f16_le(d));
    out[2..4].copy_from_slice(&f16_le(dmin));
    let mut sc = [0u8; 8];
    let mut m = [0u8; 8];
    for j in 0..8 {
        sc[j] = if d > 0.0 {
            round_clamp(scale[j] / d, 0, 63) as u8
        } else {
            0
        };
        m[j] = if dmin > 0.0 {
            round_clamp(mins[j] / dmin, 0, 63) as u8
        } else {
            0
        };
    }
    let s = &mut out[4..16];
    for k in 0..4 {
        s[k] = sc[k] | ((sc[4 + k] >> 4) << 6);
        s[4 + k] = m[k] | ((m[4 + k] >> 4) << 6);
        s[8 + k] = (sc[4 + k] & 15) | ((m[4 + k] & 15) << 4);
    }
    let qs = &mut out[16..144];
    qs.fill(0);
    for j in 0..8 {
        let ds = d * sc[j] as f32;
        let dm = dmin * m[j] as f32;
        for l in 0..32 {
            let q = if ds > 0.0 {
                round_clamp((x[32 * j + l] + dm) / ds, 0, 15) as u8
            } else {
                0
            };
            qs[32 * (j / 2) + l] |= q << (4 * (j % 2));
        }
    }
}

/// Q6_K by per-16 signed absmax: sub-block scale `x[argmax|x|] / -32` (so its largest value maps to
/// -32), quantized to i8 against `d = max |scale| / 127` (f16-rounded), then
/// `q = round(x / (d*sc))` in -32..=31.
pub fn quant_q6_k(x: &[f32], out: &mut [u8]) {
    let mut scale = [0f32; 16];
    for (j, s) in scale.iter_mut().enumerate() {
        *s = signed_absmax(&x[16 * j..16 * j + 16]) / -32.0;
    }
    let d = f16_at(&f16_le(scale.iter().fold(0f32, |a, &v| a.max(v.abs())) / 127.0));
    out[208..210].copy_from_slice(&f16_le(d));
    out[0..192].fill(0);
    for j in 0..16 {
        let sc = if d > 0.0 {
            round_clamp(scale[j] / d, -127, 127)
        } else {
            0
        };
        out[192 + j] = (sc as i8) as u8;
        let ds = d * sc as f32;
        for i in 0..16 {
            let e = 16 * j + i;
            let q = if ds != 0.0 { round_clamp(x[e] / ds, -32, 31) } else { 0 };
            let u = (q + 32) as u8;
            let (h, p) = (e / 128, e % 128);
            out[64 * h + p % 64] |= (u & 0x0F) << (4 * (p / 64));
            out[128 + 32 * h + p % 32] |= (u >> 4) << (2 * (p / 32));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_k_scale_packing_round_trips() {
        let sc = [1u8, 63, 17, 32, 63, 0, 48, 5];
        let m = [0u8, 62, 33, 7, 16, 63, 1, 40];
        let mut x = [0f32; 256];
        // Build through the packer in quant_q4_k's layout, then read back.
        let mut s = [0u8; 12];
        for k in 0..4 {
            s[k] = sc[k] | ((sc[4 + k] >> 4) << 6);
            s[4 + k] = m[k] | ((m[4 + k] >> 4) << 6);
            s[8 + k] = (sc[4 + k] & 15) | ((m[4 + k] & 15) << 4);
        }
        for j in 0..8 {
            assert_eq!(q4_k_scale_min(&s, j), (sc[j], m[j]), "sub-block {j}");
        }
        x[0] = 1.0;
        let mut b = [0u8; 144];
        quant_q4_k(&x, &mut b);
        let mut y = [0f32; 256];
        dequant_q4_k(&b, &mut y);
        assert!((y[0] - 1.0).abs() < 0.05 && y[1].abs() < 0.05, "{} {}", y[0], y[1]);
    }

    #[test]
    fn q6_k_element_placement() {
        // d = 1, all scales 1: set element e's 6-bit code to e % 64 and read it back.
        let mut b = [0u8; 210];
        b[208..210].copy_from_slice(&0x3c00u16.to_le_bytes());
        b[192..208].fill(1);
        for e in 0..256 {
            let u = (e % 64) as u8;
            let (h, p) = (e / 128, e % 128);
            b[64 * h + p % 64] |= (u & 0x0F) << (4 * (p / 64));
            b[128 + 32 * h + p % 32] |= (u >> 4) << (2 * (p / 32));
        }
        let mut y = [0f32; 256];
        dequant_q6_k(&b, &mut y);
        for (e, v) in y.iter().enumerate() {
            assert_eq!(*v, (e % 64) as f32 - 32.0, "element {e}");
        }
    }
}
