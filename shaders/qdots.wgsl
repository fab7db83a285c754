// The matvec entries' shared pieces (qmatvec.wgsl, qmatvec_xs.wgsl): R rows' dot products of one
// lane slot (or two: the trip loops' steps) and (without subgroups) the tree over workgroup memory
// `red`; the subgroup sum is sg_sum.wgsl's.

// Byte offsets of weight rows n0 + i .. n0 + i + 3 (rows past N repeat the last row; their sums
// are not stored).
fn rows_at(n0: u32, i: u32) -> vec4<u32> {
    let last = p.wbase + (p.n - 1u) * p.rowb;
    let rb = p.wbase + min(n0 + i, p.n - 1u) * p.rowb;
    return vec4<u32>(rb, min(rb + p.rowb, last), min(rb + 2u * p.rowb, last), min(rb + 3u * p.rowb, last));
}

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

// The R rows' dot products of one slot (weights at lane slot w, its x values x) or of two (w
// and w + d, x values xa and xb): rows 0..3 in lo, 4..7 in hi (computed only where R > 4).
struct Sums {
    lo: vec4<f32>,
    hi: vec4<f32>,
}
fn slot_sums(w: u32, x: X, rows: vec4<u32>, rows2: vec4<u32>) -> Sums {
    var s = Sums(dots(w, x, rows, false), vec4<f32>(0.0));
    if (R > 4u) {
        s.hi = dots(w, x, rows2, true);
    }
    return s;
}
fn pair_sums(w: u32, d: u32, xa: X, xb: X, rows: vec4<u32>, rows2: vec4<u32>) -> Sums {
    var s = Sums(dots(w, xa, rows, false) + dots(w + d, xb, rows, false), vec4<f32>(0.0));
    if (R > 4u) {
        s.hi = dots(w, xa, rows2, true) + dots(w + d, xb, rows2, true);
    }
    return s;
}

#ifdef_sg
#else_sg
// Each thread's NSUMS sums (the R rows', then the entry's others) into `red` (sum r at
// r * WG + lid), then summed over each run of `width` threads (li = lid's place in its run) into
// the run's first slot. Called by every thread.
fn tree_sums(sums: array<f32, 8>, lid: u32, li: u32, width: u32) {
    for (var r = 0u; r < NSUMS; r++) {
        red[r * WG + lid] = sums[r];
    }
    workgroupBarrier();
    for (var s = width / 2u; s > 0u; s >>= 1u) {
        if (li < s) {
            for (var r = 0u; r < NSUMS; r++) {
                red[r * WG + lid] += red[r * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
}
#endif_sg
