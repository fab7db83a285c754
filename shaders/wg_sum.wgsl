// The workgroup reduction of the RMS norms, used by rms_norm, add_rms_norm, rms_norm_rope and
// rms_norm_gated (rms_norm.rs and rms_norm_rope.rs prepend it). A tree in workgroup memory with
// halving strides: the order of the additions depends on WG alone, so a row's norm is the same
// bits whichever of these kernels computes it. WG is a power of two; every invocation of the
// workgroup calls these (they have barriers) and all get the same result.

var<workgroup> wg_red: array<f32, WG>;

// The sum over the workgroup of each invocation's v.
fn wg_sum(v: f32, lid: u32) -> f32 {
    wg_red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            wg_red[lid] += wg_red[lid + s];
        }
        workgroupBarrier();
    }
    return wg_red[0];
}

// 1 / sqrt(mean(v^2) + p.eps) over the row v = norm_in(base + j), j < p.d; `norm_in` is the
// kernel's (it may also store, as add_rms_norm's stores the sum it returns).
fn inv_rms(base: u32, lid: u32) -> f32 {
    var ss = 0.0;
    for (var j = lid; j < p.d; j += WG) {
        let v = norm_in(base + j);
        ss += v * v;
    }
    return 1.0 / sqrt(wg_sum(ss, lid) / f32(p.d) + p.eps);
}
