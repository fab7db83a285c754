// paged_gated_attention split (paged_gated_split.rs), step 1: one workgroup of NT threads per
// (query row t, query head h): the query half of qg [T, Hq, 2 Dh] normed (x̂ (1 + qn): strided
// partials summed by wg_sum of wg_tree.wgsl with WG = NT, the tree paged_gated_attention.wgsl
// has) and rotated at the row's position, into q [T, Hq, Dh] (f32, unscaled: paged_attention
// scales). A row whose description does not hold together gets NaN.
// Bindings: qg, qn, cos, sin, bt, seqs (read), q (write). Constants: DH4, NT (a power of two), WG
// (= NT).

@compute @workgroup_size(NT)
fn paged_gated_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.t * p.hq) {
        return;
    }
    let t = idx / p.hq;
    let h = idx % p.hq;
    let qrow = (t * p.hq + h) * 2u * p.dh;
    let orow = (t * p.hq + h) * p.dh;
    let row = workgroup_row(t, tid);
    var ss = 0.0;
    for (var d = tid; d < p.dh; d += NT) {
        let a = ld_qg(qrow + d);
        ss += a * a;
    }
    let total = wg_sum(ss, tid);
    if (row.z == 0u) {
        let nan = bitcast<f32>(nan_bits);
        for (var d = tid; d < p.dh; d += NT) {
            st_q(orow + d, nan);
        }
        return;
    }
    let pos = row.y - 1u;
    let inv = 1.0 / sqrt(total / f32(p.dh) + p.eps);
    // item e < half rotates the pair (e, e + half); the rest pass the dims past 2 * half through
    let rot = 2u * p.half;
    for (var e = tid; e < p.half + p.dh - rot; e += NT) {
        if (e < p.half) {
            let i1 = e + p.half;
            let c = ld_cos(pos * p.half + e);
            let s = ld_sin(pos * p.half + e);
            let a = ld_qg(qrow + e) * inv * (1.0 + ld_qn(e));
            let b = ld_qg(qrow + i1) * inv * (1.0 + ld_qn(i1));
            st_q(orow + e, a * c - b * s);
            st_q(orow + i1, b * c + a * s);
        } else {
            let d = rot + e - p.half;
            st_q(orow + d, ld_qg(qrow + d) * inv * (1.0 + ld_qn(d)));
        }
    }
}
