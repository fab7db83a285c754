// q6_k: 210-byte super-blocks of 256 elements: ql[128], qh[64], i8 scales[16], f16 d. Odd blocks
// start at 2 mod 4: every read goes through wu32 / wu32x4. Element p of half h (128 elements):
// low 4 bits from nibble p / 64 of ql[64h + p % 64], top 2 from qh[32h + p % 32] >> 2 (p / 32);
// value (d * scales[e / 16]) * (q - 32).
// Matvec lane j (16 a block): half h = j / 8, bytes l0 .. l0 + 3 (l0 = 4 (j % 8)) of each 32-byte
// run: elements 128h + 32r + l0 .. + 3 for r = 0..3 (x vectors r). Reads 2 ql words, 1 qh word,
// 2 scale words and d: 16 elements.

const QK = 256u;
const BB = 210u;
const LW = 16u;
const NX = 4u;

fn lane_x(b: u32, j: u32, i: u32) -> u32 {
    return b * 256u + (j / 8u) * 128u + (j % 8u) * 4u + i * 32u;
}

// The quant bytes (q, 0..63) of run r from ql word l (runs 0, 1: low nibbles; 2, 3: high) and
// qh word h (bits 2r, 2r + 1).
fn q6_bytes(l: u32, h: u32, r: u32) -> u32 {
    return ((l >> (4u * (r / 2u))) & 0x0f0f0f0fu) | (((h >> (2u * r)) & 0x03030303u) << 4u);
}

// The i8 in byte k of w as f32.
fn sbyte(w: u32, k: u32) -> f32 {
    return f32(bitcast<i32>(w << (24u - 8u * k)) >> 24u);
}

fn lane_dot(rb: u32, b: u32, j: u32, xa: vec4<f32>, xb: vec4<f32>, xc: vec4<f32>, xd: vec4<f32>) -> f32 {
    let a = rb + b * BB;
    let hh = j / 8u;
    let l0 = (j % 8u) * 4u;
    let l = wu32(a + hh * 64u + l0);
    let l2 = wu32(a + hh * 64u + 32u + l0);
    let h = wu32(a + 128u + hh * 32u + l0);
    let sc0 = wu32(a + 192u + hh * 8u);
    let sc1 = wu32(a + 196u + hh * 8u);
    let k = l0 / 16u;
    let r0 = dot(xa, bytes_f(q6_bytes(l, h, 0u), 32.0));
    let r1 = dot(xb, bytes_f(q6_bytes(l2, h, 1u), 32.0));
    let r2 = dot(xc, bytes_f(q6_bytes(l, h, 2u), 32.0));
    let r3 = dot(xd, bytes_f(q6_bytes(l2, h, 3u), 32.0));
    return wf16h(a + 208u) * (sbyte(sc0, k) * r0 + sbyte(sc0, k + 2u) * r1 + sbyte(sc1, k) * r2 + sbyte(sc1, k + 2u) * r3);
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = rb + (e / QK) * BB;
    let t = e % QK;
    let hh = t / 128u;
    let pp = t % 128u;
    let r = pp / 32u;
    let i = pp % 32u;
    let l = wu32(a + hh * 64u + (r % 2u) * 32u + i);
    let h = wu32(a + 128u + hh * 32u + i);
    let q = bytes_u(q6_bytes(l, h, r), 32.0);
    let si = t / 16u;
    let sw = wu32(a + 192u + (si & ~3u));
    return (wf16(a + 208u) * sbyte(sw, si & 3u)) * q;
}
