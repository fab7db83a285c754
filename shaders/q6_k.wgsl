// q6_k: 210-byte super-blocks of 256 elements: ql[128], qh[64], i8 scales[16], f16 d. Odd blocks
// start at 2 mod 4: every read goes through wu32 / wu32x4. Element p of half h (128 elements):
// low 4 bits from nibble p / 64 of ql[64h + p % 64], top 2 from qh[32h + p % 32] >> 2 (p / 32);
// value (d * scales[e / 16]) * (q - 32).
// Matvec unit: half h, bytes i0 .. i0 + 7 (i0 = 0, 8, 16, 24) of each 32-byte run: elements
// 128h + 32r + i0 .. + 7 for r = 0..3 (x vectors 2r, 2r + 1); 8 units a block. Reads 2 ql words
// twice, 2 qh words and the 4 scales (2 words), 32 elements.

const QK = 256u;
const BB = 210u;
const UPB = 8u;
const XV = 8u;

fn unit_x(u: u32, j: u32) -> u32 {
    let s = u % 8u;
    return (u / 8u) * 256u + (s / 4u) * 128u + (s % 4u) * 8u + (j / 2u) * 32u + (j % 2u) * 4u;
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

fn unit_dot(rb: u32, u: u32, xv: array<vec4<f32>, XV>) -> f32 {
    let a = rb + (u / 8u) * BB;
    let s = u % 8u;
    let hh = s / 4u;
    let i0 = (s % 4u) * 8u;
    let l = wu32x4(a + hh * 64u + i0);        // x, y: run-0/2 bytes i0..i0+7; z, w: unused
    let l2 = wu32x4(a + hh * 64u + 32u + i0); // x, y: run-1/3 bytes
    let h = wu32x4(a + 128u + hh * 32u + i0); // x, y: qh bytes
    let sc = wu32x4(a + 192u + hh * 8u);       // x, y: the 8 scales of this half
    let d = wf16(a + 208u);
    let k = i0 / 16u;  // scales k, k + 2, k + 4, k + 6 belong to runs 0..3
    let r0 = dot(xv[0], bytes_f(q6_bytes(l.x, h.x, 0u), 32.0)) + dot(xv[1], bytes_f(q6_bytes(l.y, h.y, 0u), 32.0));
    let r1 = dot(xv[2], bytes_f(q6_bytes(l2.x, h.x, 1u), 32.0)) + dot(xv[3], bytes_f(q6_bytes(l2.y, h.y, 1u), 32.0));
    let r2 = dot(xv[4], bytes_f(q6_bytes(l.x, h.x, 2u), 32.0)) + dot(xv[5], bytes_f(q6_bytes(l.y, h.y, 2u), 32.0));
    let r3 = dot(xv[6], bytes_f(q6_bytes(l2.x, h.x, 3u), 32.0)) + dot(xv[7], bytes_f(q6_bytes(l2.y, h.y, 3u), 32.0));
    return d * (sbyte(sc.x, k) * r0 + sbyte(sc.x, k + 2u) * r1 + sbyte(sc.y, k) * r2 + sbyte(sc.y, k + 2u) * r3);
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
