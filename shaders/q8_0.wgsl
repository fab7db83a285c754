// q8_0: 34-byte blocks of 32 elements: f16 d, 32 i8 q; value q * d. Blocks start at byte 34b,
// so odd blocks start at 2 mod 4 and even blocks' quants do: all reads go through wu32x4.
// Matvec unit: half a block (16 elements, 16 bytes of quants, 4 x vectors); 2 units a block.
// Signed bytes: q ^ 0x80 is q + 128 unsigned, so bytes_f(.., 128) gives q exactly.

const QK = 32u;
const BB = 34u;
const UPB = 2u;
const XV = 4u;

// Element (within the row) of x vector j of unit u.
fn unit_x(u: u32, j: u32) -> u32 {
    return u * 16u + j * 4u;
}

fn unit_dot(rb: u32, u: u32, xv: array<vec4<f32>, XV>) -> f32 {
    let a = rb + (u >> 1u) * BB;
    let d = wf16(a);
    let q = wu32x4(a + 2u + (u & 1u) * 16u) ^ vec4<u32>(0x80808080u);
    let s = dot(xv[0], bytes_f(q.x, 128.0)) + dot(xv[1], bytes_f(q.y, 128.0))
          + dot(xv[2], bytes_f(q.z, 128.0)) + dot(xv[3], bytes_f(q.w, 128.0));
    return d * s;
}

// Elements e .. e + 3 (e % 4 == 0) of the row at byte rb, dequantized exactly as the reference.
fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = rb + (e / QK) * BB;
    let q = bytes_u(wu32(a + 2u + (e % QK)) ^ 0x80808080u, 128.0);
    return q * wf16(a);
}
