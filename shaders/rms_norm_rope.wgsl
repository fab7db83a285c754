// Fused per-head RMSNorm + NeoX RoPE (the q/k preamble of Qwen3 attention):
//   n = x / sqrt(mean(x^2) + eps) * w;  y[i] = n[i] c - n[i+R/2] s,  y[i+R/2] = n[i+R/2] c + n[i] s
// for i < R/2 with (c, s) = tables[pos[t], i]; dims past R pass through normed. w is [Dh], or
// [H, Dh]: a row a head (q and k heads stacked in one call).
// One workgroup per (token, head) row of Dh; the sum of squares is reduced by inv_rms (wg_sum.wgsl).
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

fn norm_in(i: u32) -> f32 {
    return ld_x(i);
}

@compute @workgroup_size(WG)
fn rms_norm_rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    let wrow = (row % p.heads) * p.wstride;
    let half = p.rot / 2u;
    let pos = ld_pos(row / p.heads);
    let ok = pos < p.max_pos;
    if (half <= WG && p.d <= 2u * WG) {
        // A head row of at most 2 * WG elements, every load (x, w, cos and sin) issued before the
        // norm's reduction instead of after it: one round trip behind the reduction, not two. The
        // sum of squares and the products are the ones inv_rms and the loop below make, in the same
        // order (the same bits).
        let j0 = lid;
        let j1 = lid + WG;
        var x0 = 0.0; var x1 = 0.0; var w0 = 0.0; var w1 = 0.0;
        if (j0 < p.d) { x0 = ld_x(base + j0); w0 = ld_w(wrow + j0); }
        if (j1 < p.d) { x1 = ld_x(base + j1); w1 = ld_w(wrow + j1); }
        // lane i < half rotates the pair (i, i + half)
        var xa = 0.0; var xb = 0.0; var wa = 0.0; var wb = 0.0;
        var c = bitcast<f32>(0x7fc00000u);
        var s = c;
        if (lid < half) {
            xa = ld_x(base + lid);
            xb = ld_x(base + lid + half);
            wa = ld_w(wrow + lid);
            wb = ld_w(wrow + lid + half);
            if (ok) {
                c = ld_cos(pos * half + lid);
                s = ld_sin(pos * half + lid);
            }
        }
        var ss = 0.0;
        if (j0 < p.d) { ss += x0 * x0; }
        if (j1 < p.d) { ss += x1 * x1; }
        let inv = 1.0 / sqrt(wg_sum(ss, lid) / f32(p.d) + p.eps);
        if (lid < half) {
            let a = xa * inv * wa;
            let b = xb * inv * wb;
            st_y(base + lid, a * c - b * s);
            st_y(base + lid + half, b * c + a * s);
        }
        if (j0 >= p.rot && j0 < p.d) { st_y(base + j0, x0 * inv * w0); }
        if (j1 >= p.rot && j1 < p.d) { st_y(base + j1, x1 * inv * w1); }
        return;
    }
    let inv = inv_rms(base, lid);
    for (var i = lid; i < half; i += WG) {
        let a = ld_x(base + i) * inv * ld_w(wrow + i);
        let b = ld_x(base + i + half) * inv * ld_w(wrow + i + half);
        var c = bitcast<f32>(0x7fc00000u);
        var s = c;
        if (ok) {
            c = ld_cos(pos * half + i);
            s = ld_sin(pos * half + i);
        }
        st_y(base + i, a * c - b * s);
        st_y(base + i + half, b * c + a * s);
    }
    for (var j = p.rot + lid; j < p.d; j += WG) {
        st_y(base + j, ld_x(base + j) * inv * ld_w(wrow + j));
    }
}
