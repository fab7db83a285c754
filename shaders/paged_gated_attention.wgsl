// paged_gated_attention, second dispatch: one workgroup of NT threads per (query row t, query
// head h), as paged_attention (paged_attention_rows.wgsl) with Qwen3.5's ends: the query half of
// qg [T, Hq, 2 Dh] normed (x̂ (1 + qn), a fixed-shape tree over the workgroup) and rotated at
// the row's position into q_s, decode_attend over the pools (the new keys already written by
// paged_gated_attention_kv.wgsl), the output times sigmoid(gate) (the second half of qg).
// Bindings: qg, qn, cos, sin, bt, seqs, kp, vp (read), o (write). Constants: DH4 (Dh / 4), NT.

@compute @workgroup_size(NT)
fn paged_gated_attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
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
    if (row.z == 0u) {
        let nan = bitcast<f32>(nan_bits);
        for (var d = tid; d < p.dh; d += NT) {
            st_o(orow + d, nan);
        }
        return;
    }
    tbl = row.x * p.mb;
    let pos = row.y - 1u;

    // 1. mean square of the raw query: strided partials, then a tree of fixed shape (sc_s is the
    //    key loop's score buffer, free until decode_attend)
    var ss = 0.0;
    for (var d = tid; d < p.dh; d += NT) {
        let a = ld_qg(qrow + d);
        ss += a * a;
    }
    sc_s[tid] = ss;
    workgroupBarrier();
    for (var w = NT / 2u; w > 0u; w >>= 1u) {
        if (tid < w) {
            sc_s[tid] += sc_s[tid + w];
        }
        workgroupBarrier();
    }
    let inv = 1.0 / sqrt(sc_s[0] / f32(p.dh) + p.eps);

    // 2. norm and RoPE, scaled: item e < half rotates the pair (e, e + half); the rest pass the
    //    dims past 2 * half through
    let rot = 2u * p.half;
    for (var e = tid; e < p.half + p.dh - rot; e += NT) {
        if (e < p.half) {
            let i1 = e + p.half;
            let c = ld_cos(pos * p.half + e);
            let s = ld_sin(pos * p.half + e);
            let a = ld_qg(qrow + e) * inv * (1.0 + ld_qn(e));
            let b = ld_qg(qrow + i1) * inv * (1.0 + ld_qn(i1));
            q_s[e / 4u][e % 4u] = (a * c - b * s) * p.scale;
            q_s[i1 / 4u][i1 % 4u] = (b * c + a * s) * p.scale;
        } else {
            let d = rot + e - p.half;
            q_s[d / 4u][d % 4u] = ld_qg(qrow + d) * inv * (1.0 + ld_qn(d)) * p.scale;
        }
    }
    workgroupBarrier();

    // 3. attention over keys 0..=pos, 4. gate, stored in o's dtype
    var o = decode_attend(tid, row.y, (h / p.group) * p.dh);
    if (tid < DH4) {
        let d = tid * 4u;
        let gate = vec4<f32>(ld_qg(qrow + p.dh + d), ld_qg(qrow + p.dh + d + 1u), ld_qg(qrow + p.dh + d + 2u), ld_qg(qrow + p.dh + d + 3u));
        o = o / (1.0 + exp(-gate));
        st2_o(orow + d, o.x, o.y);
        st2_o(orow + d + 2u, o.z, o.w);
    }
}
