// Row top-k: the k largest of each row, in descending order, ties to the lower index; values in
// x's dtype (raw bits of the chosen elements) and u32 indices. Bit-exact with backend/cpu/reduce.rs.
// Elements are ranked by (okey desc, index asc), a total order on integer keys (NaN lowest,
// -0 == +0), so "the next pick" is "the first element strictly after the previous pick".
//
// One workgroup per row. Invocation t owns the columns t, t + WG, t + 2 WG, ... and keeps in
// registers its candidate: the first of its columns not yet picked. Each of the k rounds:
//   1. reduce the WG candidates -> the pick; invocation 0 writes it out;
//   2. only the owner w = pick % WG lost its candidate: the whole workgroup rescans w's columns
//      (about C / WG^2 loads each) for the first one after the pick, reduces, and w keeps it.
// So the row is read once plus k * C / WG elements, whatever k is.
// Bindings: x (read), vals (write, x's dtype), idx (write, u32).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    c: u32,
    k: u32,
    _pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

const NONE_I: u32 = 0xffffffffu;

// Order-preserving key of an f32: larger key = larger value; NaN -> 1, below every number;
// -0 -> the key of +0. 0 is "nothing".
fn okey(b: u32) -> u32 {
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 1u;
    }
    if (b == 0x80000000u) {
        return 0x80000000u;
    }
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// (ka, ia) ranks before (kb, ib): larger key, then lower index.
fn first(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka > kb || (ka == kb && ia < ib);
}

fn key_at(i: u32) -> u32 {
    return okey(bitcast<u32>(ld_x(i)));
}

var<workgroup> red_k: array<u32, WG>;
var<workgroup> red_i: array<u32, WG>;

// Tree reduction of red_k / red_i to slot 0 (call from uniform control flow; ends on a barrier).
fn reduce(lid: u32) {
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            let k2 = red_k[lid + h];
            let i2 = red_i[lid + h];
            if (first(k2, i2, red_k[lid], red_i[lid])) {
                red_k[lid] = k2;
                red_i[lid] = i2;
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(WG)
fn topk(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.c;
    // this invocation's candidate: the first of its columns (a strided scan keeps the lower index on ties)
    var ck = 0u;
    var ci = NONE_I;
    for (var j = lid; j < p.c; j += WG) {
        let k = key_at(base + j);
        if (k > ck) {
            ck = k;
            ci = j;
        }
    }
    for (var r = 0u; r < p.k; r++) {
        red_k[lid] = ck;
        red_i[lid] = ci;
        reduce(lid);
        let pk = red_k[0];
        let pi = red_i[0];
        if (lid == 0u) {
            stbits_vals(row * p.k + r, ldbits_x(base + pi));
            stbits_idx(row * p.k + r, pi);
        }
        // the owner's next candidate: its first column strictly after the pick
        let w = pi % WG;
        var bk = 0u;
        var bi = NONE_I;
        for (var j = w + lid * WG; j < p.c; j += WG * WG) {
            let k = key_at(base + j);
            if (k < pk || (k == pk && j > pi)) {
                if (k > bk) {
                    bk = k;
                    bi = j;
                }
            }
        }
        workgroupBarrier(); // everyone has read the pick before slot 0 is reused
        red_k[lid] = bk;
        red_i[lid] = bi;
        reduce(lid);
        if (lid == w) {
            ck = red_k[0];
            ci = red_i[0];
        }
        workgroupBarrier(); // slot 0 read before the next round writes
    }
}
