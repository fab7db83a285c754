// paged_attention, first pass: one workgroup of NT threads per (query row t, kv head g, key
// partition k), attending the G query heads g * G .. g * G + G of row t together over keys
// k * PK .. min((k + 1) * PK, kv_len) of its sequence only (paged_attention.wgsl: addressing and
// the batch-invariance argument; the key loop is paged_attend, paged_attention_loop.wgsl).
// Splitting a row's keys over workgroups gives a decode step of few sequences enough workgroups
// to fill a GPU. PK is fixed (a row's reduction order depends on it, so it must never depend on
// the batch): a row of kv_len <= PK is one partition and writes its output o / l here, as a
// kernel without partitions would; a longer row writes each partition's (o, m, l) to the scratch
// and paged_attention_combine.wgsl adds them. Partitions at or past a row's kv_len (the grid has
// Params.np for every row, enough for the longest table row) return at once. Decode, prefill and
// chunked prefill rows all go through here, so a row's bits do not depend on which of them it was
// part of.
// Bindings: q, kp, vp, bt, seqs (read), o, sc (write). Constants: DH4 (Dh / 4), NT, G (Hq / Hkv),
// PK (keys a partition, a multiple of CK).
// Scratch: record (row t - t0, query head, partition) at ((t - t0) * Hq + head) * np + partition,
// RS words each: the output sum o[0..Dh], then m, l (RS a multiple of 4: o's vec4s stay aligned).

const RS = DH4 * 4u + 4u;

// This workgroup's first query head's output offset (t * Hq + g * G) * Dh.
var<private> orow: u32;
// Whether this row has one partition (its output is final here), else its scratch record of
// group head 0 (the others follow np * RS apart).
var<private> one_part: bool;
var<private> srec: u32;

fn put_out(hh: u32, c4: u32, o: vec4<f32>) {
    let i = orow + hh * p.dh + c4 * 4u;
    st2_o(i, o.x, o.y);
    st2_o(i + 2u, o.z, o.w);
}

fn put_part(hh: u32, c4: u32, o: vec4<f32>, m: f32, l: f32) {
    if (one_part) {
        put_out(hh, c4, o / l);
        return;
    }
    let r = srec + hh * p.np * RS;
    let i = r + c4 * 4u;
    st2_sc(i, o.x, o.y);
    st2_sc(i + 2u, o.z, o.w);
    if (c4 == 0u) {
        st2_sc(r + p.dh, m, l);
    }
}

@compute @workgroup_size(NT)
fn paged_attention(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.t * p.hkv * p.np) {
        return;
    }
    let part = idx % p.np;
    let tl = idx / p.np / p.hkv;
    let g = idx / p.np % p.hkv;
    let t = p.t0 + tl;
    orow = (t * p.hq + g * G) * p.dh;
    // row, part and everything below that decides a return are workgroup-uniform (barriers follow)
    let row = workgroup_row(t, tid);
    if (row.z == 0u) {
        if (part == 0u) {
            let nan = bitcast<f32>(nan_bits);
            for (var d = tid; d < G * p.dh; d += NT) {
                st_o(orow + d, nan);
            }
        }
        return;
    }
    let k0 = part * PK;
    if (k0 >= row.y) {
        return;
    }
    one_part = row.y <= PK;
    srec = ((tl * p.hq + g * G) * p.np + part) * RS;
    tbl = row.x * p.mb;
    // the group's queries are contiguous in q: head hh's vec4 d4 is vec4 hh * DH4 + d4 of the group
    for (var i = tid; i < G * DH4; i += NT) {
        q_s[i] = ld4_q(orow + i * 4u) * p.scale;
    }
    workgroupBarrier();

    paged_attend(tid, k0, min(k0 + PK, row.y), g * p.dh);
}
