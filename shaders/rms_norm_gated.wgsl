// Gated RMSNorm over the last dim (Qwen3.5's linear-attention output norm, norm before gate):
//   y = x / sqrt(mean(x^2) + eps) * w * silu(z)
// One workgroup per row (rms_norm_rows.wgsl `norm_rows`); the sum of squares is reduced by inv_rms
// (wg_sum.wgsl). Params: rms_norm_rows.wgsl (unit_offset 0). Bindings: x, z, w (read), y (write).

fn norm_in(i: u32) -> f32 {
    return ld_x(i);
}

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

fn norm_out(i: u32, j: u32, inv: f32) {
    st_y(i, ld_x(i) * inv * ld_w(j) * silu(ld_z(i)));
}
