// The x of a quantized matvec that reads a (residual add +) RMSNorm (add_rms_norm_linear and
// rms_norm_linear with a block-quantized W; quant/ puts this before the lanes file in place of
// qx_v4.wgsl or qx_words.wgsl): x = (a + b) * nw, or a * nw, and the row's RMS factor applied to
// the outputs (a per-row scale). Each x element of the row is loaded by one invocation of the
// workgroup once (the lane slots split the row), so the invocations' shares of the sum of squares
// add up to the row's; qmatvec.wgsl sums them beside the R rows' sums (NS = 1). In the `nadd`
// variant (add_rms_norm_linear: quant/ keeps the lines between #ifdef_nadd / #else_nadd /
// #endif_nadd) the workgroup of the first weight rows stores a + b (the residual the next layer
// adds to) as it loads it, so no invocation reads a or b twice.
// Bindings after qmatvec's x (here a), w and y: in `nadd` b (read), nw (read), sum (write), else
// nw; a, b and sum f32. In the `nv4` variant (quant/ keeps the lines between #ifdef_nv4 /
// #else_nv4 / #endif_nv4: the vec4 lanes, nw f32 too, and a, b, nw and sum each starting on 16
// bytes) a, b and nw are read 16 bytes at a time and sum stored so (x_v4, b_v4, nw_v4, sum_v4:
// bindings 1, 4, 5, 6, their element offsets p.offs[0].x, p.offs[0].w, p.offs[1].x, p.offs[1].y;
// without b and sum nw_v4 is binding 4 at p.offs[0].w), three 16-byte loads a vec4 of x where
// element loads take twelve; else element by element (ld_x, ld_b, ld_nw, st_sum: any float nw,
// any offsets). Params._p0 holds eps's bits; NW_OFFSET: the norm weight is 1 + nw.

var<private> ss_part: f32 = 0.0;
// the x row's first element: a column is e - x_row0, without a division
var<private> x_row0: u32 = 0u;
// whether this workgroup stores the row's a + b (the first weight rows')
var<private> sum_row: bool = false;

// The workgroup's x row (from element xr) and first weight row n0 (qmatvec.wgsl)
fn norm_row(xr: u32, n0: u32) {
    x_row0 = xr;
    sum_row = n0 == 0u;
}

#ifdef_nv4
// a, b at elements e .. e + 3 (e a multiple of 4, relative to the bindings' offsets); nw at
// columns c .. c + 3; a + b into sum there
fn a4(e: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(x_v4[(p.offs[0].x + e) >> 2u]);
}

#ifdef_nadd
fn b4(e: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(b_v4[(p.offs[0].w + e) >> 2u]);
}

fn nw4(c: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(nw_v4[(p.offs[1].x + c) >> 2u]);
}

fn put_sum(e: u32, t: vec4<f32>) {
    sum_v4[(p.offs[1].y + e) >> 2u] = bitcast<vec4<u32>>(t);
}
#else_nadd
fn nw4(c: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(nw_v4[(p.offs[0].w + c) >> 2u]);
}
#endif_nadd
#else_nv4
fn a4(e: u32) -> vec4<f32> {
    return vec4<f32>(ld_x(e), ld_x(e + 1u), ld_x(e + 2u), ld_x(e + 3u));
}

fn nw4(c: u32) -> vec4<f32> {
    return vec4<f32>(ld_nw(c), ld_nw(c + 1u), ld_nw(c + 2u), ld_nw(c + 3u));
}

#ifdef_nadd
fn b4(e: u32) -> vec4<f32> {
    return vec4<f32>(ld_b(e), ld_b(e + 1u), ld_b(e + 2u), ld_b(e + 3u));
}

fn put_sum(e: u32, t: vec4<f32>) {
    st_sum(e, t.x);
    st_sum(e + 1u, t.y);
    st_sum(e + 2u, t.z);
    st_sum(e + 3u, t.w);
}
#endif_nadd
#endif_nv4

// (a + b) * nw, or a * nw, at elements e .. e + 3 (relative to the bindings' offsets), times
// UNLANES; the squares of a + b (a) added to ss_part; a + b stored where this workgroup stores the
// row
fn xn(e: u32) -> vec4<f32> {
#ifdef_nadd
    let t = a4(e) + b4(e);
    if (sum_row) {
        put_sum(e, t);
    }
#else_nadd
    let t = a4(e);
#endif_nadd
    ss_part += dot(t, t);
    var w = nw4(e - x_row0);
    if (NW_OFFSET) {
        w += vec4<f32>(1.0);
    }
    return t * w * UNLANES;
}

fn xv(e: u32) -> vec4<f32> {
    return xn(e);
}

fn x4s(e: u32) -> vec4<f32> {
    return xn(e);
}

// The RMS factor of a row of K elements whose squares sum to ss
fn norm_scale(ss: f32) -> f32 {
    return 1.0 / sqrt(ss / f32(p.k) + bitcast<f32>(p._p0));
}
