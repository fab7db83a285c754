// q8_0 matvec lane, vec4 path (quant/ picks it for f32 x when rows are whole 8-block groups,
// K % 256 == 0, so every group starts on 16 bytes): a slot is 16 bytes of quants (half a block)
// read as one vec4, consecutive threads on consecutive slots (a subgroup reads two groups'
// quants); its 16 x values are 4 vec4 loads that serve the R rows. Layout: q8_0.wgsl.

const SLOTS = 2u;

// xv(e), x elements e .. e + 3 times UNLANES: qx_v4.wgsl (x as given) or qx_norm.wgsl (the rows
// of a residual add + RMSNorm).

struct X {
    a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>,
}

fn slot_dot(rb: u32, c: u32, x: X) -> f32 {
    let xa = x.a;
    let xb = x.b;
    let xc = x.c;
    let xd = x.d;
    let q = w_v4[(q8_qs(rb, c >> 1u) >> 4u) + (c & 1u)] ^ vec4<u32>(0x80808080u);
    let s = dot(xa, bytes_f(q.x, 128.0)) + dot(xb, bytes_f(q.y, 128.0)) + dot(xc, bytes_f(q.z, 128.0)) + dot(xd, bytes_f(q.w, 128.0));
    return wf16h(q8_da(rb, c >> 1u)) * s;
}

fn xload(c: u32, xr: u32) -> X {
    let e = xr + c * 16u;
    return X(xv(e), xv(e + 4u), xv(e + 8u), xv(e + 12u));
}
