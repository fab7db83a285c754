// Fused residual add + RMSNorm: sum = a + b (stored in sum's dtype), y = rms_norm(sum) * w (or
// * (1 + w)). A file before this one gives `keep_b(i, b)`, called with each b after the sum is
// stored (rms_norm.rs: nothing; linear_add_rms_norm.wgsl: b is a projection's output it stores). One workgroup per row (the entry below, or rms_norm_rows.wgsl `norm_rows` for long
// rows); each invocation uses the sum as stored (rounded to sum's dtype) without reading it back.
// The sum of squares is reduced by wg_sum (wg_sum.wgsl).
// Params: rms_norm_rows.wgsl. Bindings: a, b, w (read), sum (write), y (write).

// Stores a + b and returns it as sum's dtype holds it (rounded in registers, not read back: a
// load after the store would wait on its round trip).
fn norm_in(i: u32) -> f32 {
    let b = ld_b(i);
    let v = ld_a(i) + b;
    st_sum(i, v);
    keep_b(i, b);
    return as_sum(v);
}

fn norm_out(i: u32, j: u32, inv: f32) {
    st_y(i, ld_sum(i) * inv * norm_weight(j));
}

// The entry point. A row of at most 4 * WG elements (every model's hidden size here: WG grows with
// the row) is read once into registers, every load of a, b and w issued before the first store of
// the sum: the sum may share a buffer with a or b, so a store ahead of the next stride's loads
// would make each stride wait on the previous one's round trip. The sums of squares and the
// products are the ones norm_rows makes, in the same order (the same bits). Longer rows: norm_rows.
@compute @workgroup_size(WG)
fn add_rms_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    if (p.d > 4u * WG) {
        norm_rows(wid, nwg, lid);
        return;
    }
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    let j0 = lid;
    let j1 = lid + WG;
    let j2 = lid + 2u * WG;
    let j3 = lid + 3u * WG;
    var a0 = 0.0; var a1 = 0.0; var a2 = 0.0; var a3 = 0.0;
    var b0 = 0.0; var b1 = 0.0; var b2 = 0.0; var b3 = 0.0;
    var w0 = 0.0; var w1 = 0.0; var w2 = 0.0; var w3 = 0.0;
    if (j0 < p.d) { a0 = ld_a(base + j0); b0 = ld_b(base + j0); w0 = norm_weight(j0); }
    if (j1 < p.d) { a1 = ld_a(base + j1); b1 = ld_b(base + j1); w1 = norm_weight(j1); }
    if (j2 < p.d) { a2 = ld_a(base + j2); b2 = ld_b(base + j2); w2 = norm_weight(j2); }
    if (j3 < p.d) { a3 = ld_a(base + j3); b3 = ld_b(base + j3); w3 = norm_weight(j3); }
    var ss = 0.0;
    var s0 = 0.0; var s1 = 0.0; var s2 = 0.0; var s3 = 0.0;
    if (j0 < p.d) { st_sum(base + j0, a0 + b0); s0 = as_sum(a0 + b0); ss += s0 * s0; }
    if (j1 < p.d) { st_sum(base + j1, a1 + b1); s1 = as_sum(a1 + b1); ss += s1 * s1; }
    if (j2 < p.d) { st_sum(base + j2, a2 + b2); s2 = as_sum(a2 + b2); ss += s2 * s2; }
    if (j3 < p.d) { st_sum(base + j3, a3 + b3); s3 = as_sum(a3 + b3); ss += s3 * s3; }
    if (j0 < p.d) { keep_b(base + j0, b0); }
    if (j1 < p.d) { keep_b(base + j1, b1); }
    if (j2 < p.d) { keep_b(base + j2, b2); }
    if (j3 < p.d) { keep_b(base + j3, b3); }
    let inv = 1.0 / sqrt(wg_sum(ss, lid) / f32(p.d) + p.eps);
    if (j0 < p.d) { st_y(base + j0, s0 * inv * w0); }
    if (j1 < p.d) { st_y(base + j1, s1 * inv * w1); }
    if (j2 < p.d) { st_y(base + j2, s2 * inv * w2); }
    if (j3 < p.d) { st_y(base + j3, s3 * inv * w3); }
}
