// paged_attention: one workgroup of NT threads per (query row t, kv head g), attending the G query
// heads g * G .. g * G + G of row t together over the keys of its sequence only
// (paged_attention.wgsl: addressing and the batch-invariance argument; the key loop is
// paged_attend, paged_attention_loop.wgsl). Decode, prefill and chunked prefill rows all go
// through here, so a row's bits do not depend on which of them it was part of.
// Bindings: q, kp, vp, bt, seqs (read), o (write). Constants: DH4 (Dh / 4), NT, G (Hq / Hkv).

// This workgroup's first query head's output offset (t * Hq + g * G) * Dh.
var<private> orow: u32;

fn put_out(hh: u32, c4: u32, o: vec4<f32>) {
    let i = orow + hh * p.dh + c4 * 4u;
    st2_o(i, o.x, o.y);
    st2_o(i + 2u, o.z, o.w);
}

@compute @workgroup_size(NT)
fn paged_attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.t * p.hkv) {
        return;
    }
    let t = idx / p.hkv;
    let g = idx % p.hkv;
    orow = (t * p.hq + g * G) * p.dh;
    let row = workgroup_row(t, tid);
    if (row.z == 0u) {
        let nan = bitcast<f32>(nan_bits);
        for (var d = tid; d < G * p.dh; d += NT) {
            st_o(orow + d, nan);
        }
        return;
    }
    tbl = row.x * p.mb;
    // the group's queries are contiguous in q: head hh's vec4 d4 is vec4 hh * DH4 + d4 of the group
    for (var i = tid; i < G * DH4; i += NT) {
        q_s[i] = ld4_q(orow + i * 4u) * p.scale;
    }
    workgroupBarrier();

    paged_attend(tid, row.y, g * p.dh);
}
