// Row argmax: the index of each row's maximum, the lowest index on ties; NaN never beats a number
// (a row of all NaN gives 0). -0 and +0 are equal. Matches backend/cpu/reduce.rs bit for bit.
// Comparisons run on integer keys (see okey), so no float compare can be reordered or assume
// away NaN. Short rows: one workgroup per row (`argmax`), a strided scan, then a tree reduction
// of (key, index) pairs. Long rows (a vocab): `argmax_partial` splits each row into p.chunks
// chunks, one workgroup each, writing (key, index) pairs to `part`; `argmax_final` reduces them.
// Bindings: x (read), part (write, u32 scratch [rows * chunks * 2]), idx (write, u32).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    c: u32,
    chunks: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// Order-preserving key of an f32: larger key = larger value; NaN -> 1, below every number;
// -0 -> the key of +0. 0 is left free as "nothing".
fn okey(b: u32) -> u32 {
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 1u;
    }
    if (b == 0x80000000u) {
        return 0x80000000u;
    }
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// (ka, ia) comes first: larger key, then lower index.
fn first(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka > kb || (ka == kb && ia < ib);
}

var<workgroup> red_k: array<u32, WG>;
var<workgroup> red_i: array<u32, WG>;

@compute @workgroup_size(WG)
fn argmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.c;
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var j = lid; j < p.c; j += WG) {
        let k = okey(bitcast<u32>(ld_x(base + j)));
        // j only grows, so a tie keeps the earlier index
        if (k > bk) {
            bk = k;
            bi = j;
        }
    }
    reduce_pairs(lid, bk, bi);
    if (lid == 0u) {
        st_idx(row, red_i[0]);
    }
}

// Tree reduction of one (key, index) per invocation; the winner ends in red_k[0], red_i[0].
fn reduce_pairs(lid: u32, bk: u32, bi: u32) {
    red_k[lid] = bk;
    red_i[lid] = bi;
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
fn argmax_partial(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg);
    if (g >= p.rows * p.chunks) {
        return;
    }
    let row = g / p.chunks;
    let len = (p.c + p.chunks - 1u) / p.chunks;
    let lo = (g % p.chunks) * len;
    let hi = min(lo + len, p.c);
    let base = row * p.c;
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var j = lo + lid; j < hi; j += WG) {
        let k = okey(bitcast<u32>(ld_x(base + j)));
        if (k > bk) {
            bk = k;
            bi = j;
        }
    }
    reduce_pairs(lid, bk, bi);
    if (lid == 0u) {
        stbits_part(2u * g, red_k[0]);
        stbits_part(2u * g + 1u, red_i[0]);
    }
}

@compute @workgroup_size(WG)
fn argmax_final(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var j = lid; j < p.chunks; j += WG) {
        let g = row * p.chunks + j;
        let k = ldbits_part(2u * g);
        let i = ldbits_part(2u * g + 1u);
        if (first(k, i, bk, bi)) {
            bk = k;
            bi = i;
        }
    }
    reduce_pairs(lid, bk, bi);
    if (lid == 0u) {
        st_idx(row, red_i[0]);
    }
}
