// q8_0: 34-byte blocks of 32 elements: f16 d, 32 i8 q; value q * d. Blocks start at byte 34b,
// so odd blocks start at 2 mod 4 and even blocks' quants do: all reads go through wu32x4.
// Matvec lane: two words of quants (8 elements), 4 lanes a block; lanes of a subgroup read 8
// consecutive blocks, and x in one contiguous run.
// Signed bytes: q ^ 0x80 is q + 128 unsigned, so bytes_f(.., 128) gives q exactly.

const QK = 32u;
const BB = 34u;
const LW = 4u;
const NX = 2u;

// Element (within the row) of x vector i of lane slot j of block b.
fn lane_x(b: u32, j: u32, i: u32) -> u32 {
    return b * 32u + j * 8u + i * 4u;
}

fn lane_dot(rb: u32, b: u32, j: u32, xa: vec4<f32>, xb: vec4<f32>, xc: vec4<f32>, xd: vec4<f32>) -> f32 {
    let a = rb + b * BB;
    let q0 = wu32(a + 2u + j * 8u) ^ 0x80808080u;
    let q1 = wu32(a + 6u + j * 8u) ^ 0x80808080u;
    return wf16h(a) * (dot(xa, bytes_f(q0, 128.0)) + dot(xb, bytes_f(q1, 128.0)));
}

// Elements e .. e + 3 (e % 4 == 0) of the row at byte rb, dequantized exactly as the reference.
fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = rb + (e / QK) * BB;
    let q = bytes_u(wu32(a + 2u + (e % QK)) ^ 0x80808080u, 128.0);
    return q * wf16(a);
}
