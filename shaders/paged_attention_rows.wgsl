// paged_attention: one workgroup of NT threads per (query row t, kv head g, key partition k),
// attending the G query heads g * G .. g * G + G of row t together over keys
// k * PK .. min((k + 1) * PK, kv_len) of its sequence only (paged_attention.wgsl: addressing and
// the batch-invariance argument; the key loop is paged_attend, paged_attention_loop.wgsl).
// Splitting a row's keys over workgroups gives a decode step of few sequences enough workgroups
// to fill a GPU. PK is fixed (a row's reduction order depends on it, so it must never depend on
// the batch): a row of kv_len <= PK is one partition and writes its output o / l here, as a
// kernel without partitions would. A longer row's partitions each write their (o, m, l) record to
// the scratch, and the last of the row's workgroups of kv head g to finish adds them up in
// partition order (`combine`), in this dispatch:
//   out = (sum_i o_i * exp(m_i - M)) / (sum_i l_i * exp(m_i - M)),   M = max_i m_i.
// The hand-over, as paged_attention_lone.wgsl's: records stored through atomics (device-scope
// words, which skip the non-coherent caches plain loads may hit), storageBarrier (a device-scope
// release), one thread adds 1 to the (row, kv head)'s counter; the workgroup that sees Nv - 1
// there (Nv: the row's partitions) resets it to 0 for the next dispatch, passes storageBarrier (the
// acquire) and reads the records through atomics. No workgroup waits for another. Partitions at
// or past a row's kv_len (the grid has Params.np for every row, enough for the longest table row)
// return at once. Decode, prefill and chunked prefill rows all go through here, so a row's bits do
// not depend on which of them it was part of. A partition that met a block id not in the pool has
// a NaN denominator, so its row comes out NaN.
// Bindings: q, kp, vp, bt, seqs (read), o (write), sc, cnt (atomic words). Constants: DH4
// (Dh / 4), NT, G (Hq / Hkv), PK (keys a partition, a multiple of CK).
// Scratch: record (row t - t0, query head, partition) at ((t - t0) * Hq + head) * np + partition,
// RS words each: the output sum o[0..Dh], then m, l (RS a multiple of 4). Counters: one a
// (row t - t0, kv head) at cnt[(t - t0) * Hkv + g], 0 between dispatches.

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
    st_rec(i, o.x);
    st_rec(i + 1u, o.y);
    st_rec(i + 2u, o.z);
    st_rec(i + 3u, o.w);
    if (c4 == 0u) {
        st_rec(r + p.dh, m);
        st_rec(r + p.dh + 1u, l);
    }
}

fn st_rec(i: u32, v: f32) {
    atst_sc(i, bitcast<u32>(v));
}

fn ld_rec(i: u32) -> f32 {
    return bitcast<f32>(atld_sc(i));
}

fn ld4_rec(i: u32) -> vec4<f32> {
    return vec4<f32>(ld_rec(i), ld_rec(i + 1u), ld_rec(i + 2u), ld_rec(i + 3u));
}

// Vec4 c4 of the output of query head `head` of row t (local row tl) from its np partitions'
// records, both sums in increasing partition order. Four partitions' loads are issued before
// their values are used (a loop of one load a trip waits on each), the sums still in order.
fn combine(tl: u32, t: u32, head: u32, c4: u32, np: u32) {
    let rec = (tl * p.hq + head) * p.np * RS;
    var mx = ld_rec(rec + p.dh);
    var i = 1u;
    for (; i + 4u <= np; i += 4u) {
        let r = rec + i * RS + p.dh;
        let m0 = ld_rec(r);
        let m1 = ld_rec(r + RS);
        let m2 = ld_rec(r + 2u * RS);
        let m3 = ld_rec(r + 3u * RS);
        mx = max(max(max(max(mx, m0), m1), m2), m3);
    }
    for (; i < np; i++) {
        mx = max(mx, ld_rec(rec + i * RS + p.dh));
    }
    var o = vec4<f32>(0.0);
    var l = 0.0;
    i = 0u;
    for (; i + 4u <= np; i += 4u) {
        let r = rec + i * RS;
        let o0 = ld4_rec(r + c4 * 4u);
        let o1 = ld4_rec(r + RS + c4 * 4u);
        let o2 = ld4_rec(r + 2u * RS + c4 * 4u);
        let o3 = ld4_rec(r + 3u * RS + c4 * 4u);
        let ml0 = vec2<f32>(ld_rec(r + p.dh), ld_rec(r + p.dh + 1u));
        let ml1 = vec2<f32>(ld_rec(r + RS + p.dh), ld_rec(r + RS + p.dh + 1u));
        let ml2 = vec2<f32>(ld_rec(r + 2u * RS + p.dh), ld_rec(r + 2u * RS + p.dh + 1u));
        let ml3 = vec2<f32>(ld_rec(r + 3u * RS + p.dh), ld_rec(r + 3u * RS + p.dh + 1u));
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
        let w = exp(ld_rec(r + p.dh) - mx);
        o += ld4_rec(r + c4 * 4u) * w;
        l += ld_rec(r + p.dh + 1u) * w;
    }
    let y = o / l;
    let at = (t * p.hq + head) * p.dh + c4 * 4u;
    st2_o(at, y.x, y.y);
    st2_o(at + 2u, y.z, y.w);
}

var<workgroup> count_w: u32;

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
    if (one_part) {
        return;
    }
    // the hand-over; the last workgroup of (row, g) combines the row's records of each head
    let nv = (row.y + PK - 1u) / PK;
    let counter = tl * p.hkv + g;
    storageBarrier();
    if (tid == 0u) {
        count_w = atadd_cnt(counter, 1u);
    }
    if (workgroupUniformLoad(&count_w) != nv - 1u) {
        return;
    }
    if (tid == 0u) {
        atst_cnt(counter, 0u);
    }
    storageBarrier();
    for (var it = tid; it < G * DH4; it += NT) {
        combine(tl, t, g * G + it / DH4, it % DH4, nv);
    }
}
