// q4_1: 20-byte blocks (word aligned) of 32 elements: f16 d, f16 m, 16 bytes of nibbles (low
// nibbles elements 0..15, high 16..31); value d * q + m.
// Matvec lane: two words of nibbles (elements 8j..8j+7 low, 16+8j.. high), 2 lanes a block;
// sum(x * w) = d * sum(x * q) + m * sum(x).

const QK = 32u;
const BB = 20u;
const LW = 2u;
const NX = 4u;

fn lane_x(b: u32, j: u32, i: u32) -> u32 {
    return b * 32u + j * 8u + (i & 1u) * 4u + (i >> 1u) * 16u;
}

fn lane_dot(rb: u32, b: u32, j: u32, xa: vec4<f32>, xb: vec4<f32>, xc: vec4<f32>, xd: vec4<f32>) -> f32 {
    let a = (rb + b * BB) >> 2u;
    let dm = unpack2x16float(wd(a));
    let q0 = wd(a + 1u + 2u * j);
    let q1 = wd(a + 2u + 2u * j);
    let sq = dot(xa, bytes_f(lo_nib(q0), 0.0)) + dot(xb, bytes_f(lo_nib(q1), 0.0))
           + dot(xc, bytes_f(hi_nib(q0), 0.0)) + dot(xd, bytes_f(hi_nib(q1), 0.0));
    return dm.x * sq + dm.y * dot(xa + xb + xc + xd, LANES);
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = (rb + (e / QK) * BB) >> 2u;
    let i = e % QK;
    let dm = wd(a);
    let w = wd(a + 1u + ((i & 15u) >> 2u));
    let q = bytes_u(select(lo_nib(w), hi_nib(w), i >= 16u), 0.0);
    return f16_bits_to_f32(dm & 0xffffu) * q + f16_bits_to_f32(dm >> 16u);
}
