// Sampling, one token per row of logits (Op::Sample; the reference is backend/cpu/sample.rs,
// matched bit for bit in the ids, within a tolerance in the logprobs). logits [R, V] f32,
// params [R, 4] f32 = (scale = log2(e)/T, top_k, top_p, u) -> ids [R, 1 + K] u32 (the chosen
// token, then the K best by logit), logprobs [R, 1 + K] f32 (their log-softmax at temperature 1).
//
// The order: descending by the logit's integer key (okey, as argmax.wgsl), ties to the lower id;
// with the id the key is unique, (okey, ~id), a 64-bit key. Every choice is exact:
// - a token's probability is an integer weight W = 2^-((m - l) * scale) in Q45 (`weight`), made by
//   one correctly rounded f32 subtraction and product (denormals flushed by hand) and then integer
//   operations only (a Q31 table and a cubic in Q32), because WGSL's exp is not correctly rounded;
// - masses are sums of those integers as 64-bit (lo, hi) pairs, exact in any order, so workgroup
//   atomics may add them in whatever order the device runs;
// - "the smallest prefix of the order holding a mass" is a radix search over the 64-bit key, eight
//   bits a level: a histogram of the still-matching elements (count and mass per digit), and one
//   invocation walks the digits from the top until the running mass reaches the need.
// The row-wide work every row needs runs first, split over (row, part) workgroups
// (sample_head.wgsl): each part's best (okey, id) and its sum of exp about its own maximum.
// Per row (one workgroup of 256): the head of the order, the best of the parts' bests (exact in
// any order); greedy rows stop there and never walk their row. Sampling rows:
// Z = sum W; the cut of top-k (a count search) and of top-p (a mass search for floor(Z * top_p));
// M = the mass up to the earlier cut; the draw, a mass search for floor(M * u) + 1. Then the
// logprobs (ln of the parts' sums of exp rescaled to the row's maximum and added in part order,
// compared with a tolerance) and K rounds of "the best after the previous" for the alternatives.
// The weights and the integer helpers: sample_weight.wgsl, prepended.
// Bindings: logits, params, part (read; sample_head.wgsl's [rows, parts, 4]), ids, logprobs (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    v: u32,
    k: u32,       // alternatives a row
    parts: u32,   // parts a row in `part`
}
@group(0) @binding(0) var<uniform> p: Params;

// the 8-bit digit of the composite key (k, ~j) at level lv (0..7, from the top)
fn digit(k: u32, nj: u32, lv: u32) -> u32 {
    if (lv < 4u) {
        return (k >> (24u - 8u * lv)) & 255u;
    }
    return (nj >> (24u - 8u * (lv - 4u))) & 255u;
}

// (k, nj) agrees with the prefix (pk, pn) on its first lv digits
fn matches(k: u32, nj: u32, pk: u32, pn: u32, lv: u32) -> bool {
    if (lv == 0u) {
        return true;
    }
    if (lv <= 4u) {
        let s = 32u - 8u * lv;
        return (k >> s) == (pk >> s);
    }
    let s = 64u - 8u * lv;
    return k == pk && (nj >> s) == (pn >> s);
}

var<workgroup> red_lo: array<u32, WG>;
var<workgroup> red_hi: array<u32, WG>;
var<workgroup> h_count: array<atomic<u32>, 256>;
var<workgroup> h_lo: array<atomic<u32>, 256>;
var<workgroup> h_hi: array<atomic<u32>, 256>;
// what invocation 0 tells the others: prefix key, prefix ~id, mass above (lo, hi), done, found id
var<workgroup> bc: array<u32, 8>;

// The logit bits of elements j, j + WG, j + 2 WG, j + 3 WG of the row at base: a row is long (a
// vocabulary) and has one workgroup, so its passes load four elements before using any of them
// (an invocation waits on one round trip for four, not one each).
fn row4(base: u32, j: u32) -> vec4<u32> {
    return vec4<u32>(ldbits_logits(base + j), ldbits_logits(base + j + WG), ldbits_logits(base + j + 2u * WG),
                     ldbits_logits(base + j + 3u * WG));
}

// (bk, bi) becomes (k, j) where k is after (pk, pi) and above bk: the caller offers j in
// increasing order, so a tie keeps the earlier id.
fn offer(bk: ptr<function, u32>, bi: ptr<function, u32>, k: u32, j: u32, pk: u32, pi: u32) {
    if (after(k, j, pk, pi) && k > *bk) {
        *bk = k;
        *bi = j;
    }
}

// The first element strictly after (pk, pi) in the order: (key, id) to every invocation.
fn next_after(base: u32, lid: u32, pk: u32, pi: u32) -> vec2<u32> {
    var bk = 0u;
    var bi = 0xffffffffu;
    var j = lid;
    for (; j + 3u * WG < p.v; j += 4u * WG) {
        let b = row4(base, j);
        offer(&bk, &bi, okey(b.x), j, pk, pi);
        offer(&bk, &bi, okey(b.y), j + WG, pk, pi);
        offer(&bk, &bi, okey(b.z), j + 2u * WG, pk, pi);
        offer(&bk, &bi, okey(b.w), j + 3u * WG, pk, pi);
    }
    for (; j < p.v; j += WG) {
        offer(&bk, &bi, okey(ldbits_logits(base + j)), j, pk, pi);
    }
    return best_of(lid, bk, bi);
}

// The best of every invocation's (bk, bi), ties to the lower id: (key, id) to every invocation.
fn best_of(lid: u32, bk: u32, bi: u32) -> vec2<u32> {
    tree_best(lid, bk, bi);
    if (lid == 0u) {
        bc[0] = red_k[0];
        bc[1] = red_i[0];
    }
    let s = workgroupUniformLoad(&bc);
    return vec2<u32>(s[0], s[1]);
}

// The head of the row's order from its parts' bests (sample_head.wgsl): the largest (okey, ~id)
// of all is the largest of the parts' largest, whatever order they are compared in.
fn head_of_parts(row: u32, lid: u32) -> vec2<u32> {
    var bk = 0u;
    var bi = 0xffffffffu;
    for (var q = lid; q < p.parts; q += WG) {
        let at = 4u * (row * p.parts + q);
        let k = ldbits_part(at);
        let i = ldbits_part(at + 1u);
        if (k > bk || (k == bk && i < bi)) {
            bk = k;
            bi = i;
        }
    }
    return best_of(lid, bk, bi);
}

// The weight of element j (logit bits b) if it is not after (ck, ci) in the order, else 0.
fn kept_weight(b: u32, j: u32, mb: u32, scale: f32, ck: u32, ci: u32) -> vec2<u32> {
    if (after(okey(b), j, ck, ci)) {
        return vec2<u32>(0u);
    }
    return weight(b, mb, scale);
}

// Element j (logit bits b) into the histogram of digit lv if it matches the prefix (pk, pn): its
// count, and its weight unless by_count (atomics: exact in any order).
fn bin(b: u32, j: u32, by_count: bool, mb: u32, scale: f32, pk: u32, pn: u32, lv: u32) {
    let k = okey(b);
    if (!matches(k, ~j, pk, pn, lv)) {
        return;
    }
    var w = vec2<u32>(1u, 0u);
    if (!by_count) {
        w = weight(b, mb, scale);
    }
    // a weightless element can never be where a mass is reached
    if (w.x != 0u || w.y != 0u) {
        let d = digit(k, ~j, lv);
        atomicAdd(&h_count[d], 1u);
        if (!by_count) {
            let old = atomicAdd(&h_lo[d], w.x);
            atomicAdd(&h_hi[d], w.y + select(0u, 1u, old + w.x < old));
        }
    }
}

// The total weight of the elements up to (ck, ci) in the order (all of them for ci = ~0 and ck = 0).
// (Exact integer sums: any order gives the same total.)
fn mass_upto(base: u32, lid: u32, mb: u32, scale: f32, ck: u32, ci: u32) -> vec2<u32> {
    var acc = vec2<u32>(0u);
    var j = lid;
    for (; j + 3u * WG < p.v; j += 4u * WG) {
        let b = row4(base, j);
        acc = add64(acc, kept_weight(b.x, j, mb, scale, ck, ci));
        acc = add64(acc, kept_weight(b.y, j + WG, mb, scale, ck, ci));
        acc = add64(acc, kept_weight(b.z, j + 2u * WG, mb, scale, ck, ci));
        acc = add64(acc, kept_weight(b.w, j + 3u * WG, mb, scale, ck, ci));
    }
    for (; j < p.v; j += WG) {
        acc = add64(acc, kept_weight(ldbits_logits(base + j), j, mb, scale, ck, ci));
    }
    red_lo[lid] = acc.x;
    red_hi[lid] = acc.y;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            let s = add64(vec2<u32>(red_lo[lid], red_hi[lid]), vec2<u32>(red_lo[lid + h], red_hi[lid + h]));
            red_lo[lid] = s.x;
            red_hi[lid] = s.y;
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        bc[2] = red_lo[0];
        bc[3] = red_hi[0];
    }
    let s = workgroupUniformLoad(&bc);
    return vec2<u32>(s[2], s[3]);
}

// The first element of the order at which the running total reaches `need` (>= 1, and at most
// the row's total): counting elements (by_count) or adding weights. Returns its id.
fn search(base: u32, lid: u32, by_count: bool, need: vec2<u32>, mb: u32, scale: f32) -> u32 {
    var pk = 0u;
    var pn = 0u;
    var lv = 0u;
    var above = vec2<u32>(0u);
    loop {
        atomicStore(&h_count[lid], 0u);
        atomicStore(&h_lo[lid], 0u);
        atomicStore(&h_hi[lid], 0u);
        workgroupBarrier();
        var j = lid;
        for (; j + 3u * WG < p.v; j += 4u * WG) {
            let b = row4(base, j);
            bin(b.x, j, by_count, mb, scale, pk, pn, lv);
            bin(b.y, j + WG, by_count, mb, scale, pk, pn, lv);
            bin(b.z, j + 2u * WG, by_count, mb, scale, pk, pn, lv);
            bin(b.w, j + 3u * WG, by_count, mb, scale, pk, pn, lv);
        }
        for (; j < p.v; j += WG) {
            bin(ldbits_logits(base + j), j, by_count, mb, scale, pk, pn, lv);
        }
        workgroupBarrier();
        if (lid == 0u) {
            var acc = above;
            var d = 255u;
            var c = 0u;
            loop {
                c = atomicLoad(&h_count[d]);
                var f = vec2<u32>(c, 0u);
                if (!by_count) {
                    f = vec2<u32>(atomicLoad(&h_lo[d]), atomicLoad(&h_hi[d]));
                }
                let next = add64(acc, f);
                if ((c > 0u && ge64(next, need)) || d == 0u) {
                    break;
                }
                acc = next;
                d -= 1u;
            }
            if (lv < 4u) {
                bc[0] = pk | (d << (24u - 8u * lv));
                bc[1] = pn;
            } else {
                bc[0] = pk;
                bc[1] = pn | (d << (24u - 8u * (lv - 4u)));
            }
            bc[2] = acc.x;
            bc[3] = acc.y;
            bc[4] = select(0u, 1u, c <= 1u);
        }
        let s = workgroupUniformLoad(&bc);
        pk = s[0];
        pn = s[1];
        above = vec2<u32>(s[2], s[3]);
        lv += 1u;
        if (s[4] == 1u || lv == 8u) {
            break;
        }
    }
    // the one (weighted) element under the prefix
    for (var j = lid; j < p.v; j += WG) {
        let b = ldbits_logits(base + j);
        if (matches(okey(b), ~j, pk, pn, lv)) {
            if (by_count || any(weight(b, mb, scale) != vec2<u32>(0u))) {
                bc[5] = j;
            }
        }
    }
    return workgroupUniformLoad(&bc)[5];
}

// log-softmax at temperature 1 of the logit with bits lb, given the row's maximum m (finite) and
// ln of the sum of exp(l - m)
fn logprob(lb: u32, m: f32, ln_s: f32) -> u32 {
    if ((lb & 0x7f800000u) == 0x7f800000u) {
        return lb;
    }
    return bitcast<u32>((bitcast<f32>(lb) - m) - ln_s);
}

@compute @workgroup_size(WG)
fn sample(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.v;
    let out = row * (1u + p.k);
    // 1. the head of the order: the greedy token, and the row's maximum
    let head = head_of_parts(row, lid);
    let mb = unkey(head.x);
    var token = head.y;
    // 2. the sampling parameters (as fraction24 and the reference's row_params read them)
    let sb = ldbits_params(4u * row);
    let kb = ldbits_params(4u * row + 1u);
    var top_k = 0u;
    if (kb >= 0x3f800000u && kb < 0x4b800000u) {
        top_k = u32(bitcast<f32>(kb));
    }
    if (sb >= 0x00800000u && sb < POS_INF && top_k != 1u) {
        let scale = bitcast<f32>(sb);
        let z = mass_upto(base, lid, mb, scale, 0u, 0xffffffffu);
        if (z.x != 0u || z.y != 0u) {
            // 3. the cut: the earlier of top-k's k-th element and top-p's
            var ck = 0u;
            var ci = 0xffffffffu;
            if (top_k != 0u && top_k < p.v) {
                let j = search(base, lid, true, vec2<u32>(top_k, 0u), mb, scale);
                ck = okey(ldbits_logits(base + j));
                ci = j;
            }
            let tp = fraction24(ldbits_params(4u * row + 2u));
            if (tp < ONE24) {
                var need = scale24(z, tp);
                if (need.x == 0u && need.y == 0u) {
                    need = vec2<u32>(1u, 0u);
                }
                let j = search(base, lid, false, need, mb, scale);
                let k = okey(ldbits_logits(base + j));
                if (after(ck, ci, k, j)) {
                    ck = k;
                    ci = j;
                }
            }
            // 4. the draw: the first kept token whose running mass passes floor(M u)
            let m_kept = mass_upto(base, lid, mb, scale, ck, ci);
            let u = min(fraction24(ldbits_params(4u * row + 3u)), ONE24 - 1u);
            token = search(base, lid, false, add64(scale24(m_kept, u), vec2<u32>(1u, 0u)), mb, scale);
        }
    }
    // 5. the logprobs: ln of the sum of exp(l - m) over the finite logits, from the parts' sums
    // s_p about their own maxima m_p: s = sum s_p exp(m_p - m), in part order (q within an
    // invocation, then the tree: fixed by V). A part without a finite maximum has no finite logit.
    let m = bitcast<f32>(mb);
    let finite_m = (mb & 0x7f800000u) != 0x7f800000u && head.x > 1u;
    var s = 0.0;
    if (finite_m) {
        for (var q = lid; q < p.parts; q += WG) {
            let at = 4u * (row * p.parts + q);
            let kp = ldbits_part(at);
            let mp = unkey(kp);
            if ((mp & 0x7f800000u) != 0x7f800000u && kp > 1u) {
                s += bitcast<f32>(ldbits_part(at + 2u)) * exp(bitcast<f32>(mp) - m);
            }
        }
    }
    tree_sum(lid, s);
    let ln_s = log(red_f[0]);
    if (lid == 0u) {
        st_ids(out, token);
        stbits_logprobs(out, select(0x7fc00000u, logprob(ldbits_logits(base + token), m, ln_s), finite_m));
    }
    // 6. the K best after the head, in order
    var prev = head;
    for (var r = 1u; r <= p.k; r++) {
        if (r > 1u) {
            prev = next_after(base, lid, prev.x, prev.y);
        }
        if (lid == 0u) {
            st_ids(out + r, prev.y);
            stbits_logprobs(out + r, select(0x7fc00000u, logprob(ldbits_logits(base + prev.y), m, ln_s), finite_m));
        }
    }
}
