// q4_k: 144-byte super-blocks (word aligned) of 256 elements: f16 d, f16 dmin (word 0), 12 bytes
// of 6-bit scales / mins for the 8 sub-blocks of 32 (words 1..3), 128 bytes of nibbles (words
// 4..35). Bytes 32g .. 32g + 31 of the nibbles hold sub-block 2g (low nibbles) and 2g + 1 (high).
// Value (d * sc) * q - dmin * m.
// Matvec unit: 16 bytes of nibbles (4 words: half of group g = s / 2, h = s % 2), 8 units a block:
// 16 elements of sub-block 2g (x vectors 0..3) and 16 of 2g + 1 (x vectors 4..7). A subgroup's
// 32 lanes read 4 super-blocks of one row contiguously. With the scales factored out:
// sum(x * w) = d*sc * sum(x * q) - dmin*m * sum(x) per sub-block half.

const QK = 256u;
const BB = 144u;
const UPB = 8u;
const XV = 8u;

fn unit_x(u: u32, j: u32) -> u32 {
    let s = u % 8u;
    return (u / 8u) * 256u + (s / 2u) * 64u + (s % 2u) * 16u + (j / 4u) * 32u + (j % 4u) * 4u;
}

// (scale, min) of sub-block j from the scale words s0 (bytes 0..3), s1 (4..7), s2 (8..11).
fn scale_min(s0: u32, s1: u32, s2: u32, j: u32) -> vec2<f32> {
    let b = (j & 3u) * 8u;
    let lo = vec2<u32>(s0 >> b, s1 >> b);
    let t = s2 >> b;
    let hi = vec2<u32>((t & 15u) | (((lo.x >> 6u) & 3u) << 4u), ((t >> 4u) & 15u) | (((lo.y >> 6u) & 3u) << 4u));
    return vec2<f32>(select(lo & vec2<u32>(63u), hi, j >= 4u));
}

fn unit_dot(rb: u32, u: u32, xv: array<vec4<f32>, XV>) -> f32 {
    let a = (rb + (u / 8u) * BB) >> 2u;
    let s = u % 8u;
    let g = s / 2u;
    let h0 = w_buf[a];
    let s0 = w_buf[a + 1u];
    let s1 = w_buf[a + 2u];
    let s2 = w_buf[a + 3u];
    let qa = a + 4u + g * 8u + (s % 2u) * 4u;
    let q = vec4<u32>(w_buf[qa], w_buf[qa + 1u], w_buf[qa + 2u], w_buf[qa + 3u]);
    let lo = dot(xv[0], bytes_f(lo_nib(q.x), 0.0)) + dot(xv[1], bytes_f(lo_nib(q.y), 0.0))
           + dot(xv[2], bytes_f(lo_nib(q.z), 0.0)) + dot(xv[3], bytes_f(lo_nib(q.w), 0.0));
    let hi = dot(xv[4], bytes_f(hi_nib(q.x), 0.0)) + dot(xv[5], bytes_f(hi_nib(q.y), 0.0))
           + dot(xv[6], bytes_f(hi_nib(q.z), 0.0)) + dot(xv[7], bytes_f(hi_nib(q.w), 0.0));
    let sx_lo = dot(xv[0] + xv[1] + xv[2] + xv[3], LANES);
    let sx_hi = dot(xv[4] + xv[5] + xv[6] + xv[7], LANES);
    let d = f16_bits_to_f32(h0 & 0xffffu);
    let dmin = f16_bits_to_f32(h0 >> 16u);
    let m0 = scale_min(s0, s1, s2, 2u * g);
    let m1 = scale_min(s0, s1, s2, 2u * g + 1u);
    return d * (m0.x * lo + m1.x * hi) - dmin * (m0.y * sx_lo + m1.y * sx_hi);
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = (rb + (e / QK) * BB) >> 2u;
    let r = e % QK;
    let j = r / 32u;
    let w = w_buf[a + 4u + (j / 2u) * 8u + (r % 32u) / 4u];
    let q = bytes_u(select(lo_nib(w), hi_nib(w), (j & 1u) != 0u), 0.0);
    let h0 = w_buf[a];
    let sm = scale_min(w_buf[a + 1u], w_buf[a + 2u], w_buf[a + 3u], j);
    return (f16_bits_to_f32(h0 & 0xffffu) * sm.x) * q - f16_bits_to_f32(h0 >> 16u) * sm.y;
}
