// Embedding lookup: y[t, c] = table[ids[t], c]; an id >= V gives a row of zeros.
// Each invocation owns two adjacent output elements (2q, 2q+1) of the flattened [T, D] output
// (they may straddle a row boundary when D is odd), so 16-bit outputs are written a whole word at
// a time where aligned.
//   RAW (same dtype in and out): raw bits are copied, no decode/encode.
//   otherwise: decoded to f32 and re-encoded in y's dtype (round to nearest even, like the host).
// embedding_shard: the table holds vocabulary rows first..first+V; rows of y whose id is outside
// are left untouched (one element per invocation, so a 16-bit word shared with such a row is
// never overwritten).
// Bindings: table (read), ids (read, u32), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    n: u32,   // T * D
    d: u32,   // D
    v: u32,   // V (rows of the table)
    first: u32,  // embedding_shard: vocabulary id of the table's row 0
}
@group(0) @binding(0) var<uniform> p: Params;

// Source element of output element e, or 0xffffffff for "zero" (id past the table).
fn src_index(e: u32) -> u32 {
    let t = e / p.d;
    let id = ld_ids(t);
    if (id >= p.v) {
        return 0xffffffffu;
    }
    return id * p.d + (e - t * p.d);
}

fn elem_bits(e: u32) -> u32 {
    let s = src_index(e);
    if (s == 0xffffffffu) {
        return 0u;
    }
    return ldbits_table(s);
}

fn elem_f32(e: u32) -> f32 {
    let s = src_index(e);
    if (s == 0xffffffffu) {
        return 0.0;
    }
    return ld_table(s);
}

@compute @workgroup_size(WG)
fn embedding(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let e = (group_index(wid, nwg) * WG + lid) * 2u;
    if (e >= p.n) {
        return;
    }
    if (RAW) {
        if (e + 1u < p.n) {
            st2bits_y(e, elem_bits(e), elem_bits(e + 1u));
        } else {
            stbits_y(e, elem_bits(e));
        }
    } else {
        if (e + 1u < p.n) {
            st2_y(e, elem_f32(e), elem_f32(e + 1u));
        } else {
            st_y(e, elem_f32(e));
        }
    }
}

@compute @workgroup_size(WG)
fn embedding_shard(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let e = (group_index(wid, nwg) * WG + lid) * 2u;
    for (var k = e; k < min(e + 2u, p.n); k++) {
        let t = k / p.d;
        let r = ld_ids(t) - p.first;   // wraps past the table for ids below first
        if (r < p.v) {
            let s = r * p.d + (k - t * p.d);
            if (RAW) {
                stbits_y(k, ldbits_table(s));
            } else {
                st_y(k, ld_table(s));
            }
        }
    }
}
