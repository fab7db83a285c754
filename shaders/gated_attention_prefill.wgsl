// gated_attention_prefill (T > 1): one workgroup of NT threads per (block of BQ queries, query
// head h). The key-block loop is prefill_attend (attention_prefill_loop.wgsl), as in
// attention_prefill; this kernel differs in its stages and its ends:
//   - the Q tile normalised and rotated in workgroup memory, one thread per row;
//   - key blocks staged from the cache below n_past and from k (normalised, rotated, rounded to the
//     cache dtype, one thread per row) at and past it; values likewise from the cache or v;
//   - the first head of each kv group writing its own query block's new k / v rows to the cache;
//   - the output multiplied by sigmoid(gate) and stored in o's dtype.

fn qel(i: u32, d: u32) -> f32 {
    return q_s[i * QS + d / 4u][d % 4u];
}
fn kel(j: u32, d: u32) -> f32 {
    return kv_s[j * QS + d / 4u][d % 4u];
}

// The raw query (prep_q normalises and rotates it in q_s).
fn prefill_q(b: QBlock, i: u32, d4: u32) -> vec4<f32> {
    let r = ((b.t0 + i) * p.hq + b.h) * 2u * p.dh + d4 * 4u;
    return vec4<f32>(ld_qg(r), ld_qg(r + 1u), ld_qg(r + 2u), ld_qg(r + 3u));
}

// Query row i of the tile at position pos: rms_norm (1 + qn), RoPE, times the attention scale.
fn prep_q(i: u32, pos: u32) {
    var ss = 0.0;
    for (var d4 = 0u; d4 < DH4; d4++) {
        ss += dot(q_s[i * QS + d4], q_s[i * QS + d4]);
    }
    let inv = 1.0 / sqrt(ss / f32(p.dh) + p.eps);
    for (var e = 0u; e < p.half; e++) {
        let i1 = e + p.half;
        let c = ld_cos(pos * p.half + e);
        let s = ld_sin(pos * p.half + e);
        let a = qel(i, e) * inv * (1.0 + ld_qn(e));
        let b = qel(i, i1) * inv * (1.0 + ld_qn(i1));
        q_s[i * QS + e / 4u][e % 4u] = (a * c - b * s) * p.scale;
        q_s[i * QS + i1 / 4u][i1 % 4u] = (b * c + a * s) * p.scale;
    }
    for (var d = 2u * p.half; d < p.dh; d++) {
        q_s[i * QS + d / 4u][d % 4u] = qel(i, d) * inv * (1.0 + ld_qn(d)) * p.scale;
    }
}

// Key row j of kv_s (a new key at position pos): rms_norm (1 + kn), RoPE, rounded to the cache's
// dtype; written to the cache row crow when `write`.
fn prep_k(j: u32, pos: u32, write: bool, crow: u32) {
    var ss = 0.0;
    for (var d4 = 0u; d4 < DH4; d4++) {
        ss += dot(kv_s[j * QS + d4], kv_s[j * QS + d4]);
    }
    let inv = 1.0 / sqrt(ss / f32(p.dh) + p.eps);
    for (var e = 0u; e < p.half; e++) {
        let i1 = e + p.half;
        let c = ld_cos(pos * p.half + e);
        let s = ld_sin(pos * p.half + e);
        let a = kel(j, e) * inv * (1.0 + ld_kn(e));
        let b = kel(j, i1) * inv * (1.0 + ld_kn(i1));
        kv_s[j * QS + e / 4u][e % 4u] = rnd_kc(a * c - b * s);
        kv_s[j * QS + i1 / 4u][i1 % 4u] = rnd_kc(b * c + a * s);
    }
    for (var d = 2u * p.half; d < p.dh; d++) {
        kv_s[j * QS + d / 4u][d % 4u] = rnd_kc(kel(j, d) * inv * (1.0 + ld_kn(d)));
    }
    if (write) {
        for (var d = 0u; d < p.dh; d++) {
            st_kc(crow + d, kel(j, d));
        }
    }
}

// Whether new token `tok` is one of this block's own rows, which its group's first head writes.
fn own_row(b: QBlock, tok: u32) -> bool {
    return b.h % p.group == 0u && tok >= b.t0 && tok < b.t0 + b.tn;
}

// Key rows k0..k0 + BK: cached rows, new rows (staged raw, then normalised and rotated), zeros
// past kv_end.
fn prefill_stage_k(tid: u32, k0: u32, b: QBlock) {
    let kstride = p.hkv * p.dh;
    for (var e = tid; e < BK * DH4; e += NT) {
        let key = k0 + e / DH4;
        let d = (e % DH4) * 4u;
        var x = vec4<f32>(0.0);
        if (key < p.n_past) {
            x = ld4_kc(key * kstride + b.kbase + d);
        } else if (key < b.kv_end) {
            let i = (key - p.n_past) * kstride + b.kbase + d;
            x = vec4<f32>(ld_k(i), ld_k(i + 1u), ld_k(i + 2u), ld_k(i + 3u));
        }
        kv_s[(e / DH4) * QS + e % DH4] = x;
    }
    workgroupBarrier();
    if (tid < BK) {
        let key = k0 + tid;
        if (key >= p.n_past && key < b.kv_end) {
            prep_k(tid, key, own_row(b, key - p.n_past), key * kstride + b.kbase);
        }
    }
}

// Value rows k0..k0 + BK: cached rows, new rows (rounded to the cache dtype, own rows written to
// the cache), zeros past kv_end.
fn prefill_stage_v(tid: u32, k0: u32, b: QBlock) {
    let kstride = p.hkv * p.dh;
    for (var e = tid; e < BK * DH4; e += NT) {
        let key = k0 + e / DH4;
        let d = (e % DH4) * 4u;
        var x = vec4<f32>(0.0);
        if (key < p.n_past) {
            x = ld4_vc(key * kstride + b.kbase + d);
        } else if (key < b.kv_end) {
            let tok = key - p.n_past;
            let i = tok * kstride + b.kbase + d;
            x = vec4<f32>(rnd_vc(ld_v(i)), rnd_vc(ld_v(i + 1u)), rnd_vc(ld_v(i + 2u)), rnd_vc(ld_v(i + 3u)));
            if (own_row(b, tok)) {
                let c = key * kstride + b.kbase + d;
                st_vc(c, x.x);
                st_vc(c + 1u, x.y);
                st_vc(c + 2u, x.z);
                st_vc(c + 3u, x.w);
            }
        }
        kv_s[(e / DH4) * QS + e % DH4] = x;
    }
}

// The output times sigmoid(gate), in o's dtype.
fn prefill_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>) {
    let orow = ((b.t0 + i) * p.hq + b.h) * p.dh;
    let grow = ((b.t0 + i) * p.hq + b.h) * 2u * p.dh + p.dh;
    let d = d4 * 4u;
    let gate = vec4<f32>(ld_qg(grow + d), ld_qg(grow + d + 1u), ld_qg(grow + d + 2u), ld_qg(grow + d + 3u));
    let og = o / (1.0 + exp(-gate));
    st2_o(orow + d, og.x, og.y);
    st2_o(orow + d + 2u, og.z, og.w);
}

// The staged Q rows normed and rotated in place (the fused preamble).
fn prefill_prepare(tid: u32, b: QBlock) {
    workgroupBarrier();
    if (tid < b.tn) {
        prep_q(tid, b.pos0 + tid);
    }
}

@compute @workgroup_size(NT)
fn gated_attention_prefill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                           @builtin(local_invocation_index) tid: u32
#ifdef_sg
                           , @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
                           @builtin(subgroup_id) sgid: u32
#endif_sg
                           ) {
#ifdef_sg
    prefill(wid, nwg, tid, sgid * sgs + sgi);
#else_sg
    prefill(wid, nwg, tid, tid);
#endif_sg
}
