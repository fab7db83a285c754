// q4_0 and iq4_nl: 18-byte blocks of 32 elements: f16 d, 16 bytes of nibbles (low nibbles are
// elements 0..15, high nibbles 16..31). q4_0: (q - 8) * d; iq4_nl (IQ = true): KV[q] * d.
// Odd blocks start at 2 mod 4 and even blocks' nibbles do: reads go through wu32x4.
// Matvec lane: two words of nibbles (elements 8j..8j+7 low, 16+8j.. high), 2 lanes a block.
// Constant from quant/: IQ.

const QK = 32u;
const BB = 18u;
const LW = 2u;
const NX = 4u;

const KV = array<f32, 16>(-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

fn lane_x(b: u32, j: u32, i: u32) -> u32 {
    return b * 32u + j * 8u + (i & 1u) * 4u + (i >> 1u) * 16u;
}
// Four nibble bytes t as values (LANES-scaled like bytes_f).
fn nib_vals(t: u32) -> vec4<f32> {
    if (IQ) {
        return vec4<f32>(KV[t & 15u], KV[(t >> 8u) & 15u], KV[(t >> 16u) & 15u], KV[t >> 24u]) * LANES;
    }
    return bytes_f(t, 8.0);
}

fn lane_dot(rb: u32, b: u32, j: u32, xa: vec4<f32>, xb: vec4<f32>, xc: vec4<f32>, xd: vec4<f32>) -> f32 {
    let a = rb + b * BB;
    let q0 = wu32(a + 2u + j * 8u);
    let q1 = wu32(a + 6u + j * 8u);
    return wf16h(a) * (dot(xa, nib_vals(lo_nib(q0))) + dot(xb, nib_vals(lo_nib(q1)))
                     + dot(xc, nib_vals(hi_nib(q0))) + dot(xd, nib_vals(hi_nib(q1))));
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = rb + (e / QK) * BB;
    let i = e % QK;
    let w = wu32(a + 2u + (i & 15u));
    let t = select(lo_nib(w), hi_nib(w), i >= 16u);
    return wf16(a) * (nib_vals(t) * UNLANES);
}
