// The first half of Op::Sample (sample.wgsl is the second): each row's vocabulary in parts of
// PART = 16 WG elements, one workgroup a (row, part), so the row-wide work every row needs (the
// head of the order and the sum of exp for the logprobs) runs on rows x parts workgroups instead
// of one workgroup a row, and a greedy row never walks its whole row in sample.wgsl.
// Per part, into part [rows, parts, 4] u32:
//   0, 1: the part's best (okey, id) in the order (descending key, ties to the lower id), so the
//         row's head is the best of its parts' bests whatever order they are compared in;
//   2:    s_p = the sum of exp(l - m_p) over the part's finite logits, m_p the part's own maximum
//         (its best logit; 0 when m_p is not finite: no finite logit, or +inf, where the row's
//         logprobs are NaN anyway), reduced in a fixed order (the row's s is made from these in
//         part order: the same bits whatever the batch);
//   3:    unused (16-byte records).
// The parts depend on V only (PART is fixed), never on the row count: a row's bits do not depend
// on the batch. okey comes from sample_weight.wgsl, prepended.
// Bindings: logits (read), part (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    v: u32,
    _k: u32,      // (sample.wgsl's alternatives: the two kernels share one Params)
    parts: u32,
}
@group(0) @binding(0) var<uniform> p: Params;


// exp(l - m) of the logit with bits b, 0 for an infinite or NaN one
fn exp_finite(b: u32, m: f32) -> f32 {
    if ((b & 0x7f800000u) == 0x7f800000u) {
        return 0.0;
    }
    return exp(bitcast<f32>(b) - m);
}

// The bits of element j of the row at base, NaN (weightless, last in the order) past the row's
// end: the last part may be short.
fn ld_or_nan(base: u32, j: u32) -> u32 {
    if (j < p.v) {
        return ldbits_logits(base + j);
    }
    return 0x7fc00000u;
}

// The best of (bk, bi) and (k, j) for a j past bi: a tie keeps the earlier id. Elements past the
// row's end are never offered (their NaN would tie a NaN row's own elements).
fn offer(bk: ptr<function, u32>, bi: ptr<function, u32>, b: u32, j: u32) {
    let k = okey(b);
    if (j < p.v && k > *bk) {
        *bk = k;
        *bi = j;
    }
}

@compute @workgroup_size(WG)
fn sample_parts(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg);
    if (g >= p.rows * p.parts) {
        return;
    }
    let row = g / p.parts;
    let base = row * p.v;
    // this invocation's 16 elements, lo + lid + q WG for q = 0..15, all loaded before any is used
    // (one round trip for 16) and kept for the sum of exp
    let j0 = (g % p.parts) * (16u * WG) + lid;
    var x: array<vec4<u32>, 4>;
    for (var q = 0u; q < 4u; q++) {
        let j = j0 + 4u * q * WG;
        x[q] = vec4<u32>(ld_or_nan(base, j), ld_or_nan(base, j + WG), ld_or_nan(base, j + 2u * WG),
                         ld_or_nan(base, j + 3u * WG));
    }
    // the part's best: each invocation offers its elements in increasing id
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var q = 0u; q < 4u; q++) {
        let j = j0 + 4u * q * WG;
        offer(&bk, &bi, x[q].x, j);
        offer(&bk, &bi, x[q].y, j + WG);
        offer(&bk, &bi, x[q].z, j + 2u * WG);
        offer(&bk, &bi, x[q].w, j + 3u * WG);
    }
    tree_best(lid, bk, bi);
    let best = red_k[0];
    let id = red_i[0];
    // the sum of exp about the part's maximum, in a fixed order (q within an invocation, then the
    // tree); a part without a finite maximum sums to 0
    let mb = unkey(best);
    var s = 0.0;
    if ((mb & 0x7f800000u) != 0x7f800000u && best > 1u) {
        let m = bitcast<f32>(mb);
        for (var q = 0u; q < 4u; q++) {
            s += exp_finite(x[q].x, m);
            s += exp_finite(x[q].y, m);
            s += exp_finite(x[q].z, m);
            s += exp_finite(x[q].w, m);
        }
    }
    tree_sum(lid, s);
    if (lid == 0u) {
        stbits_part(4u * g, best);
        stbits_part(4u * g + 1u, id);
        stbits_part(4u * g + 2u, bitcast<u32>(red_f[0]));
        stbits_part(4u * g + 3u, 0u);
    }
}
