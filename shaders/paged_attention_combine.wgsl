// paged_attention, second pass (paged_attention_rows.wgsl is the first): each query row of two or
// more key partitions gets its output from its partitions' records in the scratch,
//   out = (sum_i o_i * exp(m_i - M)) / (sum_i l_i * exp(m_i - M)),   M = max_i m_i,
// both sums in increasing partition order, so a row's bits depend on its own partitions only
// (their count is fixed by its kv length: paged_attention.wgsl's batch-invariance argument).
// Rows of one partition were written final by the first pass and rows whose description is
// inconsistent were written NaN there: both are left alone here. A partition that met a block id
// not in the pool has a NaN denominator, so its row comes out NaN.
// The host skips this dispatch when the grid has one partition a row (Params.np == 1).
// One thread per (query row, query head, vec4 c4 of the head): no workgroup memory, no barriers;
// the threads of one head compute the same M and denominator in the same order.
// Bindings: bt, seqs (read: find_row; bt only because paged_attention.wgsl addresses it), sc
// (read, the first pass's records), o (write). Constants: DH4, PK (as the first pass), WG.

const RS = DH4 * 4u + 4u;   // the first pass's record: o[0..Dh], m, l

@compute @workgroup_size(WG)
fn paged_attention_combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                           @builtin(local_invocation_index) tid: u32) {
    let item = group_index(wid, nwg) * WG + tid;
    if (item >= p.t * p.hq * DH4) {
        return;
    }
    let c4 = item % DH4;
    let th = item / DH4;   // (row - t0) * Hq + query head: the row's records start at th * np * RS
    let t = p.t0 + th / p.hq;
    let row = find_row(t);
    let kv_len = row.pos + 1u;
    if (!row.ok || kv_len <= PK) {
        return;
    }
    let np = (kv_len + PK - 1u) / PK;
    let rec = th * p.np * RS;
    // Four partitions' loads issued before their values are used (a loop of one load a trip
    // waits on each), the sums still in partition order.
    var mx = ld_sc(rec + p.dh);
    var i = 1u;
    for (; i + 4u <= np; i += 4u) {
        let r = rec + i * RS + p.dh;
        let m0 = ld_sc(r);
        let m1 = ld_sc(r + RS);
        let m2 = ld_sc(r + 2u * RS);
        let m3 = ld_sc(r + 3u * RS);
        mx = max(max(max(max(mx, m0), m1), m2), m3);
    }
    for (; i < np; i++) {
        mx = max(mx, ld_sc(rec + i * RS + p.dh));
    }
    var o = vec4<f32>(0.0);
    var l = 0.0;
    i = 0u;
    for (; i + 4u <= np; i += 4u) {
        let r = rec + i * RS;
        let o0 = ld4_sc(r + c4 * 4u);
        let o1 = ld4_sc(r + RS + c4 * 4u);
        let o2 = ld4_sc(r + 2u * RS + c4 * 4u);
        let o3 = ld4_sc(r + 3u * RS + c4 * 4u);
        let ml0 = vec2<f32>(ld_sc(r + p.dh), ld_sc(r + p.dh + 1u));
        let ml1 = vec2<f32>(ld_sc(r + RS + p.dh), ld_sc(r + RS + p.dh + 1u));
        let ml2 = vec2<f32>(ld_sc(r + 2u * RS + p.dh), ld_sc(r + 2u * RS + p.dh + 1u));
        let ml3 = vec2<f32>(ld_sc(r + 3u * RS + p.dh), ld_sc(r + 3u * RS + p.dh + 1u));
        let w0 = exp(ml0.x - mx);
        o += o0 * w0;
        l += ml0.y * w0;
        let w1 = exp(ml1.x - mx);
        o += o1 * w1;
        l += ml1.y * w1;
        let w2 = exp(ml2.x - mx);
        o += o2 * w2;
        l += ml2.y * w2;
        let w3 = exp(ml3.x - mx);
        o += o3 * w3;
        l += ml3.y * w3;
    }
    for (; i < np; i++) {
        let r = rec + i * RS;
        let w = exp(ld_sc(r + p.dh) - mx);
        o += ld4_sc(r + c4 * 4u) * w;
        l += ld_sc(r + p.dh + 1u) * w;
    }
    let y = o / l;
    let at = (t * p.hq + th % p.hq) * p.dh + c4 * 4u;
    st2_o(at, y.x, y.y);
    st2_o(at + 2u, y.z, y.w);
}
