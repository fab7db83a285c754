// The row of the fused per-head RMSNorm + NeoX RoPE, shared by rms_norm_rope (rms_norm_rope.wgsl)
// and rms_norm_rope_kv (rms_norm_rope_kv.wgsl), which put it after wg_sum.wgsl and before their
// entry:
//   n = x / sqrt(mean(x^2) + eps) * w;  y[i] = n[i] c - n[i+R/2] s,  y[i+R/2] = n[i+R/2] c + n[i] s
// for i < R/2 with (c, s) = tables[pos, i]; dims past R pass through normed.
// The kernel gives Params p (d, rot, eps, max_pos), bindings x, w, cos, sin, fn norm_in (ld_x, for
// inv_rms) and fn put(e: u32, v: f32) (where a result goes).

fn norm_in(i: u32) -> f32 {
    return ld_x(i);
}

// One head row: x elements base..base+d normed with weight elements wrow.., rotated at position
// `pos` (no table entry when pos >= max_pos: NaN, as Rope), stored through the kernel's
// put(dst + i, value). Every invocation of the workgroup calls it (the reduction has barriers).
fn norm_rope_row(base: u32, dst: u32, wrow: u32, pos: u32, lid: u32) {
    let half = p.rot / 2u;
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
            put(dst + lid, a * c - b * s);
            put(dst + lid + half, b * c + a * s);
        }
        if (j0 >= p.rot && j0 < p.d) { put(dst + j0, x0 * inv * w0); }
        if (j1 >= p.rot && j1 < p.d) { put(dst + j1, x1 * inv * w1); }
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
        put(dst + i, a * c - b * s);
        put(dst + i + half, b * c + a * s);
    }
    for (var j = p.rot + lid; j < p.d; j += WG) {
        put(dst + j, ld_x(base + j) * inv * ld_w(wrow + j));
    }
}
