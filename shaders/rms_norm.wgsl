// RMSNorm over the last dim: y = x / sqrt(mean(x^2) + eps) * w   (or * (1 + w) when unit_offset).
// One workgroup per row (rms_norm_rows.wgsl `norm_rows`); the sum of squares is reduced by inv_rms
// (wg_sum.wgsl). Params: rms_norm_rows.wgsl. Bindings: x (read), w (read), y (write).

fn norm_in(i: u32) -> f32 {
    return ld_x(i);
}

fn norm_out(i: u32, j: u32, inv: f32) {
    st_y(i, ld_x(i) * inv * norm_weight(j));
}
