// The x of a quantized matvec that reads a residual add + RMSNorm (add_rms_norm_linear with a
// block-quantized W; quant/ puts this before the lanes file in place of qx_v4.wgsl or
// qx_words.wgsl): x = (a + b) * nw, and the row's RMS factor applied to the outputs (a per-row
// scale). Each x element of the row is loaded by one invocation of the workgroup once (the lane
// slots split the row), so the invocations' shares of the sum of squares add up to the row's;
// qmatvec.wgsl sums them beside the R rows' sums (NS = 1). The workgroup of the first weight rows
// stores a + b (the residual the next layer adds to).
// Bindings after qmatvec's x (here a), w and y: b (read), nw (read), sum (write); a, b and sum
// f32. Params._p0 holds eps's bits; NW_OFFSET: the norm weight is 1 + nw.

var<private> ss_part: f32 = 0.0;
// the x row's first element (qmatvec.wgsl sets it): a column is e - x_row0, without a division
var<private> x_row0: u32 = 0u;

// (a + b) * nw at elements e .. e + 3 (relative to the bindings' offsets), times UNLANES; the
// squares of a + b added to ss_part
fn xn(e: u32) -> vec4<f32> {
    let t = vec4<f32>(ld_x(e) + ld_b(e), ld_x(e + 1u) + ld_b(e + 1u), ld_x(e + 2u) + ld_b(e + 2u),
                      ld_x(e + 3u) + ld_b(e + 3u));
    ss_part += dot(t, t);
    let c = e - x_row0;
    var w = vec4<f32>(ld_nw(c), ld_nw(c + 1u), ld_nw(c + 2u), ld_nw(c + 3u));
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

// a + b of x row mi into sum, by the workgroup of the first weight rows
fn store_sum(mi: u32, n0: u32, lid: u32) {
    if (n0 == 0u) {
        for (var c = lid; c < p.k; c += WG) {
            let e = mi * p.k + c;
            st_sum(e, ld_x(e) + ld_b(e));
        }
    }
}
