// add_rms_norm_linear and rms_norm_linear on the matvec: y = rms_norm(a + b, nw) Wᵀ (or of a
// alone) without storing the normed rows. linear/ prepends this to matvec.wgsl for those ops (the
// `norm` trip, body.rs). The norm is a per-row scale, so a workgroup sums x = (a + b) * nw against
// its weight rows and, from the same loads, the row's sum of squares; the output is scaled by the
// RMS factor at the end. In the `nadd` variant (add_rms_norm_linear: linear/ keeps the lines
// between #ifdef_nadd / #else_nadd / #endif_nadd) the workgroup of the first weight rows also
// stores the sum (the residual the next layer adds to); rms_norm_linear reads a row already summed.
// Bindings after linear.wgsl's x (here a), w and y: in `nadd` b (read), nw (read), sum (write),
// else nw; a, b and sum f32, K even. Params._pad0 holds eps's bits; NW_OFFSET: the norm weight is
// 1 + nw.

// Elements e and e + 1 of a + b, or of a (e relative to the bindings' offsets)
fn sum_pair(e: u32) -> vec2<f32> {
#ifdef_nadd
    return vec2<f32>(ld_x(e) + ld_b(e), ld_x(e + 1u) + ld_b(e + 1u));
#else_nadd
    return vec2<f32>(ld_x(e), ld_x(e + 1u));
#endif_nadd
}

// The norm weight of columns c and c + 1
fn nw_pair(c: u32) -> vec2<f32> {
    let w = vec2<f32>(ld_nw(c), ld_nw(c + 1u));
    if (NW_OFFSET) {
        return 1.0 + w;
    }
    return w;
}

// The RMS factor of a row of K elements whose squares sum to ss
fn norm_scale(ss: f32) -> f32 {
    return 1.0 / sqrt(ss / f32(p.k) + bitcast<f32>(p._pad0));
}
