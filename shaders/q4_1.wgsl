// q4_1: 20-byte blocks (word aligned) of 32 elements: f16 d, f16 m, 16 bytes of nibbles (low
// nibbles elements 0..15, high 16..31); value d * q + m.
// Matvec unit: one block (5 words, 8 x vectors); sum(x * w) = d * sum(x * q) + m * sum(x).

const QK = 32u;
const BB = 20u;
const UPB = 1u;
const XV = 8u;

fn unit_x(u: u32, j: u32) -> u32 {
    return u * 32u + j * 4u;
}

fn unit_dot(rb: u32, u: u32, xv: array<vec4<f32>, XV>) -> f32 {
    let a = (rb + u * BB) >> 2u;
    let dm = w_buf[a];
    let q = vec4<u32>(w_buf[a + 1u], w_buf[a + 2u], w_buf[a + 3u], w_buf[a + 4u]);
    let sq = dot(xv[0], bytes_f(lo_nib(q.x), 0.0)) + dot(xv[1], bytes_f(lo_nib(q.y), 0.0))
           + dot(xv[2], bytes_f(lo_nib(q.z), 0.0)) + dot(xv[3], bytes_f(lo_nib(q.w), 0.0))
           + dot(xv[4], bytes_f(hi_nib(q.x), 0.0)) + dot(xv[5], bytes_f(hi_nib(q.y), 0.0))
           + dot(xv[6], bytes_f(hi_nib(q.z), 0.0)) + dot(xv[7], bytes_f(hi_nib(q.w), 0.0));
    let sx = dot(xv[0] + xv[1] + xv[2] + xv[3] + xv[4] + xv[5] + xv[6] + xv[7], LANES);
    return f16_bits_to_f32(dm & 0xffffu) * sq + f16_bits_to_f32(dm >> 16u) * sx;
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = (rb + (e / QK) * BB) >> 2u;
    let i = e % QK;
    let dm = w_buf[a];
    let w = w_buf[a + 1u + ((i & 15u) >> 2u)];
    let q = bytes_u(select(lo_nib(w), hi_nib(w), i >= 16u), 0.0);
    return f16_bits_to_f32(dm & 0xffffu) * q + f16_bits_to_f32(dm >> 16u);
}
