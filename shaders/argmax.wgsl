// Row argmax: the index of each row's maximum, the lowest index on ties; NaN never beats a number
// (a row of all NaN gives 0). -0 and +0 are equal. Matches backend/cpu/reduce.rs bit for bit.
// Comparisons run on integer keys (see okey), so no float compare can be reordered or assume
// away NaN. One workgroup per row: a strided scan, then a tree reduction of (key, index) pairs.
// Bindings: x (read), idx (write, u32).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    c: u32,
    _pad0: u32,
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
    if (lid == 0u) {
        st_idx(row, red_i[0]);
    }
}
