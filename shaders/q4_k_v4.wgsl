// q4_k matvec lane, vec4 path (quant/ picks it for f32 x when every row starts on 16 bytes;
// a 144-byte super-block is 9 vec4 words: the header d, dmin, scales, then 8 of nibbles): a
// slot is one vec4 of nibbles, 8 a super-block, so a subgroup reads 4 super-blocks in one run.
// Slot j holds bytes 16(j%2) .. + 15 of nibble group j/2: elements 64(j/2) + 16(j%2) .. + 15
// (low nibbles, sub-block j - j%2) and the same + 32 (high, the next sub-block). Its 32 x
// values (8 vec4 loads) and their two sums serve the R rows. Layout and scale_min: q4_k.wgsl.

const SLOTS = 8u;

// xv(e), x elements e .. e + 3 times UNLANES: qx_v4.wgsl (x as given) or qx_norm.wgsl (the rows
// of a residual add + RMSNorm).

struct X {
    l0: vec4<f32>, l1: vec4<f32>, l2: vec4<f32>, l3: vec4<f32>,
    h0: vec4<f32>, h1: vec4<f32>, h2: vec4<f32>, h3: vec4<f32>,
    sl: f32, sh: f32,
}

fn slot_dot(rb: u32, c: u32, x: X) -> f32 {
    let a = (rb >> 4u) + (c >> 3u) * 9u;
    let j = c & 7u;
    let hd = w_v4[a];
    let q = w_v4[a + 1u + j];
    let dd = unpack2x16float(hd.x);
    let m0 = scale_min(hd.y, hd.z, hd.w, j & 6u);
    let m1 = scale_min(hd.y, hd.z, hd.w, (j & 6u) + 1u);
    let lo = dot(x.l0, bytes_f(lo_nib(q.x), 0.0)) + dot(x.l1, bytes_f(lo_nib(q.y), 0.0))
           + dot(x.l2, bytes_f(lo_nib(q.z), 0.0)) + dot(x.l3, bytes_f(lo_nib(q.w), 0.0));
    let hi = dot(x.h0, bytes_f(hi_nib(q.x), 0.0)) + dot(x.h1, bytes_f(hi_nib(q.y), 0.0))
           + dot(x.h2, bytes_f(hi_nib(q.z), 0.0)) + dot(x.h3, bytes_f(hi_nib(q.w), 0.0));
    return dd.x * (m0.x * lo + m1.x * hi) - dd.y * (m0.y * x.sl + m1.y * x.sh);
}

fn xload(c: u32, xr: u32) -> X {
    let j = c & 7u;
    let e = xr + (c >> 3u) * 256u + (j >> 1u) * 64u + (j & 1u) * 16u;
    var x: X;
    x.l0 = xv(e);
    x.l1 = xv(e + 4u);
    x.l2 = xv(e + 8u);
    x.l3 = xv(e + 12u);
    x.h0 = xv(e + 32u);
    x.h1 = xv(e + 36u);
    x.h2 = xv(e + 40u);
    x.h3 = xv(e + 44u);
    x.sl = dot(x.l0 + x.l1 + x.l2 + x.l3, LANES);
    x.sh = dot(x.h0 + x.h1 + x.h2 + x.h3, LANES);
    return x;
}
