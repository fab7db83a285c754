// Fused residual add + RMSNorm: sum = a + b (stored in sum's dtype), y = rms_norm(sum) * w (or
// * (1 + w)). One workgroup per row (rms_norm_rows.wgsl `norm_rows`); each invocation re-reads only
// the sum elements it stored. The sum of squares is reduced by inv_rms (wg_sum.wgsl).
// Params: rms_norm_rows.wgsl. Bindings: a, b, w (read), sum (write), y (write).

// Stores a + b and reads it back as sum's dtype holds it.
fn norm_in(i: u32) -> f32 {
    st_sum(i, ld_a(i) + ld_b(i));
    return ld_sum(i);
}

fn norm_out(i: u32, j: u32, inv: f32) {
    st_y(i, ld_sum(i) * inv * norm_weight(j));
}
