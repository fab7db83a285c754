// Gated RMSNorm over the last dim (Qwen3.5's linear-attention output norm, norm before gate):
//   y = x / sqrt(mean(x^2) + eps) * w * silu(z)
// One workgroup per row; the sum of squares is reduced by wg_sum (wg_sum.wgsl).
// Bindings: x, z, w (read), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    d: u32,
    eps: f32,
    _pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

@compute @workgroup_size(WG)
fn rms_norm_gated(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    var ss = 0.0;
    for (var j = lid; j < p.d; j += WG) {
        let v = ld_x(base + j);
        ss += v * v;
    }
    let inv = 1.0 / sqrt(wg_sum(ss, lid) / f32(p.d) + p.eps);
    for (var j = lid; j < p.d; j += WG) {
        st_y(base + j, ld_x(base + j) * inv * ld_w(j) * silu(ld_z(base + j)));
    }
}
