// paged_attention: one workgroup of NT threads per (query row t, query head h), over the keys of
// its sequence only (paged_attention.wgsl: addressing and the batch-invariance argument; the key
// loop is decode_attend, attention_decode_loop.wgsl). Decode, prefill and chunked prefill rows
// all go through here, so a row's bits do not depend on which of them it was part of.
// Bindings: q, kp, vp, bt, seqs (read), o (write). Constants: DH4 (Dh / 4), NT.

@compute @workgroup_size(NT)
fn paged_attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.t * p.hq) {
        return;
    }
    let t = idx / p.hq;
    let h = idx % p.hq;
    let qrow = (t * p.hq + h) * p.dh;
    let row = workgroup_row(t, tid);
    if (row.z == 0u) {
        let nan = bitcast<f32>(nan_bits);
        for (var d = tid; d < p.dh; d += NT) {
            st_o(qrow + d, nan);
        }
        return;
    }
    tbl = row.x * p.mb;
    for (var d4 = tid; d4 < DH4; d4 += NT) {
        q_s[d4] = ld4_q(qrow + d4 * 4u) * p.scale;
    }
    workgroupBarrier();

    let o = decode_attend(tid, row.y, (h / p.group) * p.dh);
    if (tid < DH4) {
        st2_o(qrow + tid * 4u, o.x, o.y);
        st2_o(qrow + tid * 4u + 2u, o.z, o.w);
    }
}
