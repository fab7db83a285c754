//! Valid random blocks for kernel parity tests and benchmarks: every quant byte random, every f16
//! scale finite with magnitude in 2^-8..2^-4 and a random sign (every format here reads its scales
//! as plain f16, so a negative `d`, `dmin` or `m` is a valid block, and a kernel that drops the
//! sign fails on it). Deterministic in the seed (splitmix64, `util::Rng`).
use super::f16_le;
use crate::dtype::DType;
use crate::util::Rng;

/// A random f16 scale: magnitude 2^(-8 + 4u) for u uniform in [0, 1), random sign.
fn scale(r: &mut Rng) -> [u8; 2] {
    let mag = (-8.0 + 4.0 * r.uniform()).exp2() as f32;
    let sign = if r.next_u64() & 1 == 1 { -1.0 } else { 1.0 };
    f16_le(sign * mag)
}

fn fill(r: &mut Rng, out: &mut [u8]) {
    for chunk in out.chunks_mut(8) {
        let w = r.next_u64().to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
}

/// `n_elems` elements (rounded up to whole blocks) of random valid `dt` blocks.
pub fn random_blocks(dt: DType, n_elems: usize, seed: u64) -> Vec<u8> {
    let (be, bb) = dt.block();
    assert!(dt.is_quant(), "quant::random_blocks on the unquantized type {dt}");
    let mut r = Rng::new(seed);
    let mut out = vec![0u8; n_elems.div_ceil(be) * bb];
    for b in out.chunks_exact_mut(bb) {
        fill(&mut r, b);
        match dt {
            DType::Q8_0 | DType::Q4_0 | DType::IQ4NL => b[0..2].copy_from_slice(&scale(&mut r)),
            DType::Q4_1 | DType::Q4K => {
                b[0..2].copy_from_slice(&scale(&mut r));
                b[2..4].copy_from_slice(&scale(&mut r));
            }
            // i8 sub-scales stay random bytes (-128..=127); d is the last two bytes.
            DType::Q6K => b[208..210].copy_from_slice(&scale(&mut r)),
            _ => unreachable!("checked is_quant above"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::dequantize;

    #[test]
    fn random_blocks_are_finite_deterministic_and_varied() {
        for dt in DType::QUANTS {
            let (be, _) = dt.block();
            let b = random_blocks(dt, 40 * be, 11);
            assert_eq!(b, random_blocks(dt, 40 * be, 11), "{dt}: not deterministic");
            assert_ne!(b, random_blocks(dt, 40 * be, 12), "{dt}: seed ignored");
            let v = dequantize(dt, &b);
            assert_eq!(v.len(), 40 * be);
            assert!(v.iter().all(|x| x.is_finite()), "{dt}: non-finite value");
            assert!(
                v.iter().any(|x| *x > 0.0) && v.iter().any(|x| *x < 0.0),
                "{dt}: one-signed"
            );
        }
    }
}
