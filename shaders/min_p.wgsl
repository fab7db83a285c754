// Min-p over rows of logits, one row per sequence (Op::MinP; the reference is backend/cpu/min_p.rs,
// matched bit for bit). logits [R, V] f32, margin [R, 1] f32 -> out [R, V] f32: with m the row's
// largest non-NaN logit, l is kept when l >= m - margin, else it becomes -inf (NaN too); a margin
// of +inf copies the row. One workgroup per row: a strided scan for the largest key, a tree
// reduction in workgroup memory, then a strided pass that writes the row.
// Every comparison runs on order-preserving integer keys (okey, as in argmax.wgsl), and infinities
// are handled by their bits: WGSL may assume no inf/NaN in float arithmetic and comparisons. The
// one float operation, m - margin, is correctly rounded.
// Bindings: logits, margin (read), out (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    v: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

const POS_INF: u32 = 0x7f800000u;
const NEG_INF: u32 = 0xff800000u;

// Order-preserving key of an f32: larger key = larger value; NaN -> 1, below every number;
// -0 -> the key of +0; 0 stays free as "nothing".
fn okey(b: u32) -> u32 {
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 1u;
    }
    if (b == 0x80000000u) {
        return 0x80000000u;
    }
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// The f32 bits of a key (a number's key; -0 comes back as +0, which compares the same).
fn unkey(k: u32) -> u32 {
    return select(~k, k & 0x7fffffffu, k >= 0x80000000u);
}

var<workgroup> red: array<u32, WG>;

@compute @workgroup_size(WG)
fn min_p(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.v;
    let margin = ldbits_margin(row);
    if (margin == POS_INF) {
        for (var j = lid; j < p.v; j += WG) {
            stbits_out(base + j, ldbits_logits(base + j));
        }
        return;
    }
    var best = 0u;
    for (var j = lid; j < p.v; j += WG) {
        best = max(best, okey(ldbits_logits(base + j)));
    }
    red[lid] = best;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            red[lid] = max(red[lid], red[lid + h]);
        }
        workgroupBarrier();
    }
    let top = red[0];
    // no number in the row (all NaN): nothing is kept
    var keep_from = 0xffffffffu;
    if (top > 1u) {
        let m = unkey(top);
        var thr = m;
        // m - margin for a finite m; an infinite m stays what it is
        if ((m & 0x7fffffffu) != POS_INF) {
            thr = bitcast<u32>(bitcast<f32>(m) - bitcast<f32>(margin));
        }
        keep_from = okey(thr);
    }
    for (var j = lid; j < p.v; j += WG) {
        let b = ldbits_logits(base + j);
        let k = okey(b);
        stbits_out(base + j, select(NEG_INF, b, k >= keep_from && k > 1u));
    }
}
