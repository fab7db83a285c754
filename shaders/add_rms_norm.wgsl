// Fused residual add + RMSNorm: sum = a + b (stored in sum's dtype), y = rms_norm(sum) * w (or
// * (1 + w)). One workgroup per row; each invocation re-reads only the sum elements it stored.
// The sum of squares is reduced by wg_sum (wg_sum.wgsl).
// Bindings: a, b, w (read), sum (write), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    d: u32,
    eps: f32,
    unit_offset: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn add_rms_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    var ss = 0.0;
    for (var j = lid; j < p.d; j += WG) {
        st_sum(base + j, ld_a(base + j) + ld_b(base + j));
        let v = ld_sum(base + j);
        ss += v * v;
    }
    let inv = 1.0 / sqrt(wg_sum(ss, lid) / f32(p.d) + p.eps);
    for (var j = lid; j < p.d; j += WG) {
        var g = ld_w(j);
        if (p.unit_offset != 0u) {
            g = 1.0 + g;
        }
        st_y(base + j, ld_sum(base + j) * inv * g);
    }
}
