// q4_0 and iq4_nl: 18-byte blocks of 32 elements: f16 d, 16 bytes of nibbles (low nibbles are
// elements 0..15, high nibbles 16..31). q4_0: (q - 8) * d; iq4_nl (IQ = true): KV[q] * d.
// Odd blocks start at 2 mod 4 and even blocks' nibbles do: reads go through wu32x4.
// Matvec unit: one block (16 bytes, 32 elements, 8 x vectors: 0..3 low, 4..7 high nibbles).
// Constant from quant.rs: IQ.

const QK = 32u;
const BB = 18u;
const UPB = 1u;
const XV = 8u;

const KV = array<f32, 16>(-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

fn unit_x(u: u32, j: u32) -> u32 {
    return u * 32u + j * 4u;
}

// Four nibble bytes t as values (LANES-scaled like bytes_f).
fn nib_vals(t: u32) -> vec4<f32> {
    if (IQ) {
        return vec4<f32>(KV[t & 15u], KV[(t >> 8u) & 15u], KV[(t >> 16u) & 15u], KV[t >> 24u]) * LANES;
    }
    return bytes_f(t, 8.0);
}

fn unit_dot(rb: u32, u: u32, xv: array<vec4<f32>, XV>) -> f32 {
    let a = rb + u * BB;
    let d = wf16(a);
    let q = wu32x4(a + 2u);
    let s = dot(xv[0], nib_vals(lo_nib(q.x))) + dot(xv[1], nib_vals(lo_nib(q.y)))
          + dot(xv[2], nib_vals(lo_nib(q.z))) + dot(xv[3], nib_vals(lo_nib(q.w)))
          + dot(xv[4], nib_vals(hi_nib(q.x))) + dot(xv[5], nib_vals(hi_nib(q.y)))
          + dot(xv[6], nib_vals(hi_nib(q.z))) + dot(xv[7], nib_vals(hi_nib(q.w)));
    return d * s;
}

fn wq4(rb: u32, e: u32) -> vec4<f32> {
    let a = rb + (e / QK) * BB;
    let i = e % QK;
    let w = wu32(a + 2u + (i & 15u));
    let t = select(lo_nib(w), hi_nib(w), i >= 16u);
    return wf16(a) * (nib_vals(t) * UNLANES);
}
