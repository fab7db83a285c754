// q4_k matvec lane, vec4 path (quant.rs picks it for f32 x when every row starts on 16 bytes;
// a 144-byte super-block is 9 vec4 words: the header d, dmin, scales, then 8 of nibbles): a
// slot is one vec4 of nibbles, 8 a super-block, so a subgroup reads 4 super-blocks in one run.
// Slot j holds bytes 16(j%2) .. + 15 of nibble group j/2: elements 64(j/2) + 16(j%2) .. + 15
// (low nibbles, sub-block j - j%2) and the same + 32 (high, the next sub-block). Its 32 x
// values (8 vec4 loads) and their two sums serve the R rows. Layout and scale_min: q4_k.wgsl.

const SLOTS = 8u;

// ONEF (quant.rs): nibbles as 1 + q/16 (q shifted into the top mantissa bits of 1.0: one
// shift and one and/or an element, no subtraction); sum(x * q) = 16 * (sum(x * (1 + q/16)) -
// sum(x)), and sum(x) is needed for the mins anyway. Else bytes_f (exact q, x times UNLANES).
fn xv(e: u32) -> vec4<f32> {
    let v = bitcast<vec4<f32>>(x_v4[(p.offs[0].x + e) >> 2u]);
    if (ONEF) {
        return v;
    }
    return v * UNLANES;
}

const ONE_M = vec4<u32>(0x00780000u);
const ONE_E = vec4<u32>(0x3f800000u);
// 1 + q/16 for the low (hi = false) or high nibbles of the four bytes of w.
fn onef(w: u32, hi: bool) -> vec4<f32> {
    var v = vec4<u32>(w << 19u, w << 11u, w << 3u, w >> 5u);
    if (hi) {
        v = vec4<u32>(w << 15u, w << 7u, w >> 1u, w >> 9u);
    }
    return bitcast<vec4<f32>>((v & ONE_M) | ONE_E);
}

struct X8 {
    l0: vec4<f32>, l1: vec4<f32>, l2: vec4<f32>, l3: vec4<f32>,
    h0: vec4<f32>, h1: vec4<f32>, h2: vec4<f32>, h3: vec4<f32>,
    sl: f32, sh: f32,
}

fn row_dot(rb: u32, c: u32, x: X8) -> f32 {
    let a = (rb >> 4u) + (c >> 3u) * 9u;
    let j = c & 7u;
    let hd = w_v4[a];
    let q = w_v4[a + 1u + j];
    if (DIAG == 1u) {
        // loads only (sweep diagnostic): every loaded word reaches the result, no dequantization
        return bitcast<f32>((q.x ^ q.y ^ q.z ^ q.w ^ hd.x) & 0x3fffffffu) * x.sl + x.sh;
    }
    let dd = unpack2x16float(hd.x);
    let m0 = scale_min(hd.y, hd.z, hd.w, j & 6u);
    let m1 = scale_min(hd.y, hd.z, hd.w, (j & 6u) + 1u);
    if (ONEF) {
        let lo = dot(x.l0, onef(q.x, false)) + dot(x.l1, onef(q.y, false)) + dot(x.l2, onef(q.z, false)) + dot(x.l3, onef(q.w, false));
        let hi = dot(x.h0, onef(q.x, true)) + dot(x.h1, onef(q.y, true)) + dot(x.h2, onef(q.z, true)) + dot(x.h3, onef(q.w, true));
        let ql = 16.0 * (lo - x.sl);
        let qh = 16.0 * (hi - x.sh);
        return dd.x * (m0.x * ql + m1.x * qh) - dd.y * (m0.y * x.sl + m1.y * x.sh);
    }
    let lo = dot(x.l0, bytes_f(lo_nib(q.x), 0.0)) + dot(x.l1, bytes_f(lo_nib(q.y), 0.0))
           + dot(x.l2, bytes_f(lo_nib(q.z), 0.0)) + dot(x.l3, bytes_f(lo_nib(q.w), 0.0));
    let hi = dot(x.h0, bytes_f(hi_nib(q.x), 0.0)) + dot(x.h1, bytes_f(hi_nib(q.y), 0.0))
           + dot(x.h2, bytes_f(hi_nib(q.z), 0.0)) + dot(x.h3, bytes_f(hi_nib(q.w), 0.0));
    return dd.x * (m0.x * lo + m1.x * hi) - dd.y * (m0.y * x.sl + m1.y * x.sh);
}

fn xload(c: u32, xr: u32) -> X8 {
    let j = c & 7u;
    let e = xr + (c >> 3u) * 256u + (j >> 1u) * 64u + (j & 1u) * 16u;
    var x: X8;
    x.l0 = xv(e);
    x.l1 = xv(e + 4u);
    x.l2 = xv(e + 8u);
    x.l3 = xv(e + 12u);
    x.h0 = xv(e + 32u);
    x.h1 = xv(e + 36u);
    x.h2 = xv(e + 40u);
    x.h3 = xv(e + 44u);
    let un = select(LANES, vec4<f32>(1.0), ONEF);
    x.sl = dot(x.l0 + x.l1 + x.l2 + x.l3, un);
    x.sh = dot(x.h0 + x.h1 + x.h2 + x.h3, un);
    return x;
}

// rows 0..3 of the workgroup's R, or (hi) rows 4..7; rows past R left 0
fn dots(c: u32, x: X8, rows: vec4<u32>, hi: bool) -> vec4<f32> {
    let n = select(min(R, 4u), max(R, 4u) - 4u, hi);
    var v = vec4<f32>(0.0);
    if (n > 0u) {
        v.x = row_dot(rows.x, c, x);
    }
    if (n > 1u) {
        v.y = row_dot(rows.y, c, x);
    }
    if (n > 2u) {
        v.z = row_dot(rows.z, c, x);
    }
    if (n > 3u) {
        v.w = row_dot(rows.w, c, x);
    }
    return v;
}
