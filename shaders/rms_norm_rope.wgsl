// Fused per-head RMSNorm + NeoX RoPE (the q/k preamble of Qwen3 attention):
//   n = x / sqrt(mean(x^2) + eps) * w;  y[i] = n[i] c - n[i+R/2] s,  y[i+R/2] = n[i+R/2] c + n[i] s
// for i < R/2 with (c, s) = tables[pos[t], i]; dims past R pass through normed. w is [Dh], or
// [H, Dh]: a row a head (q and k heads stacked in one call).
// One workgroup per (token, head) row of Dh; the row is norm_rope_row (rms_norm_rope_row.wgsl).
// Bindings: x, w, pos, cos, sin (read), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    heads: u32,
    d: u32,
    rot: u32,
    eps: f32,
    max_pos: u32,
    wstride: u32,   // Dh when w is [H, Dh] (a row a head), else 0
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn put(e: u32, v: f32) {
    st_y(e, v);
}

@compute @workgroup_size(WG)
fn rms_norm_rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    norm_rope_row(base, base, (row % p.heads) * p.wstride, ld_pos(row / p.heads), lid);
}
