// RMSNorm over the last dim: y = x / sqrt(mean(x^2) + eps) * w   (or * (1 + w) when unit_offset).
// One workgroup per row; the sum of squares is reduced by inv_rms (wg_sum.wgsl).
// Params: rms_norm_rows.wgsl. Bindings: x (read), w (read), y (write).

fn norm_in(i: u32) -> f32 {
    return ld_x(i);
}

@compute @workgroup_size(WG)
fn rms_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    let inv = inv_rms(base, lid);
    for (var j = lid; j < p.d; j += WG) {
        st_y(base + j, ld_x(base + j) * inv * norm_weight(j));
    }
}
