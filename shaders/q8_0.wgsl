// q8_0: blocks of 32 elements, f16 d and 32 i8 q; value q * d. GGUF stores 34-byte blocks
// (d first); the wgpu device keeps groups of 8 blocks, counted from the start of the buffer
// (a view past block 0 finds its blocks by index), as their 8 x 32 bytes of quants then their 8
// scales: 272 bytes (qlayout.rs, the same bytes reordered). A row at byte rb (34 x its first
// block's index) has block b at buffer block rb / 34 + b. Quants are word aligned.
// Matvec lane: two words of quants (8 elements), 4 lanes a block; lanes of a subgroup read 8
// consecutive blocks' quants, and x, in one contiguous run.
// Signed bytes: q ^ 0x80 is q + 128 unsigned, so bytes_f(.., 128) gives q exactly.

const QK = 32u;
const LW = 4u;
const NX = 2u;

// Byte of the quants / of d of block b of the row at byte rb.
fn q8_qs(rb: u32, b: u32) -> u32 {
    let g = rb / 34u + b;
    return (g >> 3u) * 272u + (g & 7u) * 32u;
}
fn q8_da(rb: u32, b: u32) -> u32 {
    let g = rb / 34u + b;
    return (g >> 3u) * 272u + 256u + (g & 7u) * 2u;
}

// Element (within the row) of x vector i of lane slot j of block b.
fn lane_x(b: u32, j: u32, i: u32) -> u32 {
    return b * 32u + j * 8u + i * 4u;
}

fn lane_dot(rb: u32, b: u32, j: u32, xa: vec4<f32>, xb: vec4<f32>, xc: vec4<f32>, xd: vec4<f32>) -> f32 {
    let a = (q8_qs(rb, b) >> 2u) + 2u * j;
    let q0 = wd(a) ^ 0x80808080u;
    let q1 = wd(a + 1u) ^ 0x80808080u;
    return wf16h(q8_da(rb, b)) * (dot(xa, bytes_f(q0, 128.0)) + dot(xb, bytes_f(q1, 128.0)));
}

// Elements e .. e + 3 (e % 4 == 0) of the row at byte rb, dequantized exactly as the reference.
fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let b = e / QK;
    let q = bytes_u(wd((q8_qs(rb, b) + e % QK) >> 2u) ^ 0x80808080u, 128.0);
    return q * wf16(q8_da(rb, b));
}
