// The RMS of a row for rms_norm, add_rms_norm, rms_norm_rope and rms_norm_gated (rms_norm.rs and
// rms_norm_rope.rs prepend it, after wg_tree.wgsl): strided partials summed by wg_sum, so a row's
// norm is the same bits whichever of these kernels computes it. Every invocation of the workgroup
// calls inv_rms (it has barriers) and all get the same result.

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
