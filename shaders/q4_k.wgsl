// q4_k: 144-byte super-blocks (word aligned) of 256 elements: f16 d, f16 dmin (word 0), 12 bytes
// of 6-bit scales / mins for the 8 sub-blocks of 32 (words 1..3), 128 bytes of nibbles (words
// 4..35). Bytes 32g .. 32g + 31 of the nibbles hold sub-block 2g (low nibbles) and 2g + 1 (high).
// Value (d * sc) * q - dmin * m.
// Matvec lane: words 2j, 2j + 1 of the nibbles (group g = j / 4): elements 64g + 8(j%4) .. + 7 of
// sub-block 2g (low nibbles) and the same + 32 of sub-block 2g + 1 (high); 16 lanes a block, so
// a subgroup reads two super-blocks' nibbles in one run. With the scales factored out:
// sum(x * w) = d*sc * sum(x * q) - dmin*m * sum(x) per sub-block.

const QK = 256u;
const BB = 144u;
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
    let a = (rb + b * BB) >> 2u;
    let g = j / 4u;
    let dd = unpack2x16float(wd(a));
    let s0 = wd(a + 1u);
    let s1 = wd(a + 2u);
    let s2 = wd(a + 3u);
    let q0 = wd(a + 4u + 2u * j);
    let q1 = wd(a + 5u + 2u * j);
    let lo = dot(xa, bytes_f(lo_nib(q0), 0.0)) + dot(xb, bytes_f(lo_nib(q1), 0.0));
    let hi = dot(xc, bytes_f(hi_nib(q0), 0.0)) + dot(xd, bytes_f(hi_nib(q1), 0.0));
    let m0 = scale_min(s0, s1, s2, 2u * g);
    let m1 = scale_min(s0, s1, s2, 2u * g + 1u);
    return dd.x * (m0.x * lo + m1.x * hi) - dd.y * (m0.y * dot(xa + xb, LANES) + m1.y * dot(xc + xd, LANES));
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = (rb + (e / QK) * BB) >> 2u;
    let r = e % QK;
    let j = r / 32u;
    let w = wd(a + 4u + (j / 2u) * 8u + (r % 32u) / 4u);
    let q = bytes_u(select(lo_nib(w), hi_nib(w), (j & 1u) != 0u), 0.0);
    let h0 = wd(a);
    let sm = scale_min(wd(a + 1u), wd(a + 2u), wd(a + 3u), j);
    return (f16_bits_to_f32(h0 & 0xffffu) * sm.x) * q - f16_bits_to_f32(h0 >> 16u) * sm.y;
}
