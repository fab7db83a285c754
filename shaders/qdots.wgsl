// The matvec entries' shared pieces (qmatvec.wgsl, qmatvec_xs.wgsl): R rows' dot products of one
// lane slot, and the subgroup sum.

// The dot products of lane slot w (its x values in x) with the rows at bytes `rows`: rows 0..3 of
// the workgroup's R, or (hi) rows 4..7; rows past R left 0.
fn dots(w: u32, x: X, rows: vec4<u32>, hi: bool) -> vec4<f32> {
    let n = select(min(R, 4u), max(R, 4u) - 4u, hi);
    var v = vec4<f32>(0.0);
    if (n > 0u) {
        v.x = slot_dot(rows.x, w, x);
    }
    if (n > 1u) {
        v.y = slot_dot(rows.y, w, x);
    }
    if (n > 2u) {
        v.z = slot_dot(rows.z, w, x);
    }
    if (n > 3u) {
        v.w = slot_dot(rows.w, w, x);
    }
    return v;
}

#ifdef_sg
// Butterfly sum over the subgroup (shuffles: naga 30 rejects `enable subgroups;`).
fn sg_sum(v: f32, sgs: u32) -> f32 {
    var s = v;
    for (var d = sgs / 2u; d > 0u; d >>= 1u) {
        s += subgroupShuffleXor(s, d);
    }
    return s;
}

#endif_sg
