//! The wgpu device's byte order for q8_0: blocks stored in groups of 8 (by block index from the
//! start of the buffer, so a view past block 0, e.g. a stacked q/k/v weight's k rows, finds its
//! blocks by index) as their 8 x 32 bytes of quants, then their 8 f16 scales: 272 bytes, the
//! GGUF blocks' own bytes reordered, nothing expanded (a last group of fewer blocks keeps its
//! slots). Quants are then word aligned, and a row of whole
//! 256-element groups reads as aligned vec4 words, a subgroup's in contiguous runs. Other
//! quantized types keep GGUF order (q4_k in 8-block groups of headers and nibble halves was
//! slower at 8B-class matrices, so q4_k stays as GGUF lays it out).
//!
//! context/buffers.rs' upload / download convert (`to_device`, `from_device`); `device_bytes` sizes buffers.
use crate::dtype::DType;

/// (GGUF block bytes, device group bytes) of a type the device regroups 8 blocks at a time.
pub fn group(d: DType) -> Option<(usize, usize)> {
    match d {
        DType::Q8_0 => Some((34, 272)),
        _ => None,
    }
}

/// Device bytes of a buffer of `numel` elements of `d`.
pub fn device_bytes(d: DType, numel: usize) -> usize {
    match group(d) {
        Some((_, gb)) => numel.div_ceil(8 * d.block().0) * gb,
        None => d.nbytes(numel),
    }
}

/// Each byte run of block i (0..8) of a group: (offset in the GGUF block, offset in the device
/// group, length).
fn runs(d: DType, i: usize, f: &mut dyn FnMut(usize, usize, usize)) {
    match d {
        DType::Q8_0 => {
            f(2, 32 * i, 32);
            f(0, 256 + 2 * i, 2);
        }
        d => unreachable!("qlayout: {d} keeps GGUF order"),
    }
}

/// GGUF blocks `gguf` (buffer blocks b0 ..) into device groups `dev`, which starts at the group
/// of block b0 and holds every group they touch; other blocks' slots are left as they are.
pub fn to_device(d: DType, b0: usize, gguf: &[u8], dev: &mut [u8]) {
    let (bb, gb) = group(d).expect("a regrouped type");
    for (j, blk) in gguf.chunks_exact(bb).enumerate() {
        let (g, i) = ((b0 % 8 + j) / 8 * gb, (b0 + j) % 8);
        runs(d, i, &mut |s, t, n| {
            dev[g + t..g + t + n].copy_from_slice(&blk[s..s + n])
        });
    }
}

/// The GGUF bytes of blocks b0 .. b0 + gguf.len() / block bytes from device groups `dev` (which
/// starts at the group of block b0).
pub fn from_device(d: DType, b0: usize, dev: &[u8], gguf: &mut [u8]) {
    let (bb, gb) = group(d).expect("a regrouped type");
    for (j, blk) in gguf.chunks_exact_mut(bb).enumerate() {
        let (g, i) = ((b0 % 8 + j) / 8 * gb, (b0 + j) % 8);
        runs(d, i, &mut |s, t, n| {
            blk[s..s + n].copy_from_slice(&dev[g + t..g + t + n])
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of a block lands in its group exactly once, and back: a round trip from any
    /// block offset is the identity, and the slots of blocks outside the range keep their bytes.
    #[test]
    fn round_trip_from_any_block() {
        for d in [DType::Q8_0] {
            let (bb, gb) = group(d).unwrap();
            for (b0, n) in [(0, 8), (0, 13), (3, 5), (5, 19), (7, 1)] {
                let gguf: Vec<u8> = (0..n * bb).map(|i| (i * 7 + 3) as u8).collect();
                let groups = (b0 % 8 + n).div_ceil(8);
                // written on a zero and on a 0xff background: the bytes both agree on were written
                let (mut z, mut f) = (vec![0u8; groups * gb], vec![0xffu8; groups * gb]);
                to_device(d, b0, &gguf, &mut z);
                to_device(d, b0, &gguf, &mut f);
                assert_eq!(
                    z.iter().zip(&f).filter(|(a, b)| a == b).count(),
                    gguf.len(),
                    "{d}: bytes written"
                );
                let mut back = vec![0u8; gguf.len()];
                from_device(d, b0, &z, &mut back);
                assert_eq!(back, gguf, "{d} from block {b0}, {n} blocks");
            }
        }
    }
}
