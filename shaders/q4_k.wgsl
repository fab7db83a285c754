// q4_k: 144-byte super-blocks of 256 elements: f16 d, f16 dmin (header word 0), 12 bytes of 6-bit
// scales / mins for the 8 sub-blocks of 32 (header words 1..3), 128 bytes of nibbles (nibble
// words 0..31). Bytes 32g .. 32g + 31 of the nibbles hold sub-block 2g (low nibbles) and 2g + 1
// (high). Value (d * sc) * q - dmin * m.
// The wgpu device stores them in groups of 8 by block index from the start of the buffer
// (qlayout.rs: 1152 bytes, the 8 headers, then the first 16 bytes of every nibble group, block
// i's group g at slot 4i + g, then the second 16 bytes); a row at byte rb (144 x its first
// block's index, as in GGUF) has block b at buffer block rb / 144 + b.
// Matvec lane: words 2j, 2j + 1 of the nibbles (group g = j / 4): elements 64g + 8(j%4) .. + 7 of
// sub-block 2g (low nibbles) and the same + 32 of sub-block 2g + 1 (high); 16 lanes a block, so
// a subgroup reads two super-blocks' nibbles in one run. With the scales factored out:
// sum(x * w) = d*sc * sum(x * q) - dmin*m * sum(x) per sub-block.

const QK = 256u;
const BB = 144u;

// Buffer block index of block b of the row at byte rb.
fn q4k_blk(rb: u32, b: u32) -> u32 {
    return rb / BB + b;
}
// u32 word of buffer block bi's header word i (0..3) / nibble word w (0..31: bytes 4w .. 4w + 3
// of its nibbles), in the device groups.
fn q4k_hd(bi: u32, i: u32) -> u32 {
    return (bi >> 3u) * 288u + (bi & 7u) * 4u + i;
}
fn q4k_nw(bi: u32, w: u32) -> u32 {
    return (bi >> 3u) * 288u + 32u + ((w >> 2u) & 1u) * 128u + ((bi & 7u) * 4u + (w >> 3u)) * 4u + (w & 3u);
}
const LW = 16u;
const NX = 4u;

fn lane_x(b: u32, j: u32, i: u32) -> u32 {
    return b * 256u + (j / 4u) * 64u + (j % 4u) * 8u + (i & 1u) * 4u + (i >> 1u) * 32u;
}

// (scale, min) of sub-block j from the scale words s0 (bytes 0..3), s1 (4..7), s2 (8..11).
fn scale_min(s0: u32, s1: u32, s2: u32, j: u32) -> vec2<f32> {
    let b = (j & 3u) * 8u;
    let lo = vec2<u32>(s0 >> b, s1 >> b);
    let t = s2 >> b;
    let hi = vec2<u32>((t & 15u) | (((lo.x >> 6u) & 3u) << 4u), ((t >> 4u) & 15u) | (((lo.y >> 6u) & 3u) << 4u));
    // 6-bit values to floats with the magic number (no int->float conversion)
    return bitcast<vec2<f32>>(select(lo & vec2<u32>(63u), hi, j >= 4u) | vec2<u32>(MAGIC)) - vec2<f32>(8388608.0);
}

fn lane_dot(rb: u32, b: u32, j: u32, xa: vec4<f32>, xb: vec4<f32>, xc: vec4<f32>, xd: vec4<f32>) -> f32 {
    let bi = q4k_blk(rb, b);
    let g = j / 4u;
    let dd = unpack2x16float(wd(q4k_hd(bi, 0u)));
    let s0 = wd(q4k_hd(bi, 1u));
    let s1 = wd(q4k_hd(bi, 2u));
    let s2 = wd(q4k_hd(bi, 3u));
    let q0 = wd(q4k_nw(bi, 2u * j));
    let q1 = wd(q4k_nw(bi, 2u * j + 1u));
    let lo = dot(xa, bytes_f(lo_nib(q0), 0.0)) + dot(xb, bytes_f(lo_nib(q1), 0.0));
    let hi = dot(xc, bytes_f(hi_nib(q0), 0.0)) + dot(xd, bytes_f(hi_nib(q1), 0.0));
    let m0 = scale_min(s0, s1, s2, 2u * g);
    let m1 = scale_min(s0, s1, s2, 2u * g + 1u);
    return dd.x * (m0.x * lo + m1.x * hi) - dd.y * (m0.y * dot(xa + xb, LANES) + m1.y * dot(xc + xd, LANES));
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let bi = q4k_blk(rb, e / QK);
    let r = e % QK;
    let j = r / 32u;
    let w = wd(q4k_nw(bi, (j / 2u) * 8u + (r % 32u) / 4u));
    let q = bytes_u(select(lo_nib(w), hi_nib(w), (j & 1u) != 0u), 0.0);
    let h0 = wd(q4k_hd(bi, 0u));
    let sm = scale_min(wd(q4k_hd(bi, 1u)), wd(q4k_hd(bi, 2u)), wd(q4k_hd(bi, 3u)), j);
    return (f16_bits_to_f32(h0 & 0xffffu) * sm.x) * q - f16_bits_to_f32(h0 >> 16u) * sm.y;
}
