// Fused residual add + RMSNorm: sum = a + b (stored in sum's dtype), y = rms_norm(sum) * w (or
// * (1 + w)). One workgroup per row; each invocation re-reads only the sum elements it stored.
// The sum of squares is reduced by inv_rms (wg_sum.wgsl).
// Params: rms_norm_rows.wgsl. Bindings: a, b, w (read), sum (write), y (write).

// Stores a + b and reads it back as sum's dtype holds it.
fn norm_in(i: u32) -> f32 {
    st_sum(i, ld_a(i) + ld_b(i));
    return ld_sum(i);
}

@compute @workgroup_size(WG)
fn add_rms_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    let inv = inv_rms(base, lid);
    for (var j = lid; j < p.d; j += WG) {
        st_y(base + j, ld_sum(base + j) * inv * norm_weight(j));
    }
}
