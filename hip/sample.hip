// sample: logits [R, V] f32, params [R, 4] f32 = (scale = log2(e)/T, top_k, top_p, u)
// -> ids [R, 1 + K] u32 (the chosen token, then the K best by logit), logprobs [R, 1 + K] f32 (their
// log-softmax at temperature 1) (Op::Sample). The ids agree bit for bit with backend/cpu/sample.rs,
// the logprobs within a tolerance; shaders/sample.wgsl is the same algorithm.
//
// The order: descending by the 64-bit key (okey(l) << 32) | ~id, i.e. by logit, ties to the lower
// id; every key is unique. Every choice is exact: a token's probability is the integer weight
// 2^-((m - l) * scale) in Q45 (`weight`: one f32 subtraction and one product, denormals flushed by
// hand, then integer operations only, because no device's exp is correctly rounded), and masses
// are u64 sums of weights, exact in any order, so shared-memory atomics may add them however the
// device schedules. "The first element of the order where a running total reaches a need" is a
// radix search over the key, 8 bits a level (`search`).
// Per row (one block): the head of the order (greedy rows stop there); then Z = sum W together with
// the logprobs' sum of exp; the top-k cut (a count search), the top-p cut (a mass search for
// floor(Z top_p)), the kept mass M up to the earlier cut, and the draw: a mass search for
// floor(M u) + 1. Then the K alternatives: K - 1 rounds of "the best after the previous" for a small
// K, else a count search for the K-th and one pass gathering the K that come first.
// grid.x = R.
#include "wgllm_hip.h"

#define SAMPLE_TOP_BITS 45u
#define SAMPLE_ONE24 0x1000000u
// ln 2 in Q32
#define SAMPLE_LN2_Q32 2977044472u
// the most alternatives (MAX_TOP_LOGPROBS in src/op/sample.rs)
#define SAMPLE_MAX_K 64u
// up to this many alternatives, rounds of next_after are cheaper than a search and a gather
#define SAMPLE_ROUNDS_K 3u

WG_DEV u32 unkey(u32 k) { return k >= 0x80000000u ? (k & 0x7fffffffu) : ~k; }
WG_DEV u64 ckey(u32 bits, u32 j) { return ((u64)wg_okey(wg_bits_f(bits)) << 32) | (u64)(~j); }
WG_DEV u32 mulhi(u32 a, u32 b) { return (u32)(((u64)a * b) >> 32); }
// floor(x f / 2^24) for a 24-bit fraction f, without a 128-bit product
WG_DEV u64 scale24(u64 x, u32 f) { return (((x >> 32) * f) << 8) + (((x & 0xffffffffull) * f) >> 24); }
// a subnormal (or zero) becomes +0, whether or not this device flushes them
WG_DEV u32 flushb(u32 b) { return (b & 0x7f800000u) == 0u ? 0u : b; }

// A number in [0, 1] as a 24-bit fraction: floor(x 2^24); 2^24 for x >= 1 (and NaN), 0 below 0.
WG_DEV u32 fraction24(float x) {
    u32 b = wg_f_bits(x);
    if ((b & 0x80000000u) != 0u) return 0u;
    if (b >= 0x3f800000u) return SAMPLE_ONE24;
    return (u32)(x * 16777216.0f);
}

// 2^-z in Q45 for z >= 0 given by its bits; 0 once z >= 46.
WG_DEV u64 exp2_neg_q45(u32 zb) {
    // 2^(-j/64) in Q31 (the same numbers as EXP2_TABLE in backend/cpu/sample.rs)
    static const u32 EXP2[64] = {
        2147483648u, 2124350982u, 2101467502u, 2078830522u, 2056437387u, 2034285470u, 2012372174u, 1990694927u,
        1969251188u, 1948038440u, 1927054196u, 1906295993u, 1885761398u, 1865448001u, 1845353420u, 1825475297u,
        1805811301u, 1786359126u, 1767116489u, 1748081133u, 1729250827u, 1710623359u, 1692196547u, 1673968228u,
        1655936265u, 1638098541u, 1620452965u, 1602997467u, 1585730000u, 1568648537u, 1551751076u, 1535035634u,
        1518500250u, 1502142985u, 1485961921u, 1469955159u, 1454120821u, 1438457051u, 1422962010u, 1407633882u,
        1392470869u, 1377471191u, 1362633090u, 1347954824u, 1333434672u, 1319070932u, 1304861917u, 1290805962u,
        1276901417u, 1263146652u, 1249540052u, 1236080024u, 1222764986u, 1209593378u, 1196563654u, 1183674286u,
        1170923762u, 1158310587u, 1145833280u, 1133490379u, 1121280436u, 1109202018u, 1097253708u, 1085434106u};
    u32 n = 0u, f = 0u;
    if (zb >= 0x00800000u) {
        i32 e = (i32)(zb >> 23) - 127;
        if (e >= 6) return 0u;
        u32 mant = (zb & 0x7fffffu) | 0x800000u;
        if (e >= 0) {
            n = mant >> (u32)(23 - e);
            f = mant << (u32)(9 + e);
        } else {
            u32 s = (u32)(-1 - e);
            f = s >= 32u ? 0u : (mant << 8) >> s;
        }
    }
    if (n > SAMPLE_TOP_BITS) return 0u;
    u32 t = EXP2[f >> 26];
    // 2^-r = e^-a for the remaining r < 2^-6, a = r ln 2: 1 - (a - a^2/2 + a^3/6), in Q32
    u32 a = mulhi(f & 0x03ffffffu, SAMPLE_LN2_Q32);
    u32 a2 = mulhi(a, a);
    u32 a3 = mulhi(a2, a);
    u32 e31 = t - mulhi(t, a - (a2 >> 1) + a3 / 6u);
    return ((u64)e31 << (SAMPLE_TOP_BITS - 31u)) >> n;
}

// The weight of a logit (bits lb) in a row whose maximum has bits mb, at `scale`. NaN and -inf
// weigh 0; with m = +inf only the +inf logits weigh.
WG_DEV u64 weight(u32 lb, u32 mb, float scale) {
    if ((lb & 0x7fffffffu) > 0x7f800000u || lb == 0xff800000u || mb == 0xff800000u) return 0u;
    if (mb == 0x7f800000u) return lb == 0x7f800000u ? (1ull << SAMPLE_TOP_BITS) : 0u;
    // the bit casts keep the subtraction and the product apart: each rounds on its own
    u32 d = flushb(wg_f_bits(wg_bits_f(flushb(mb)) - wg_bits_f(flushb(lb))));
    return exp2_neg_q45(flushb(wg_f_bits(wg_bits_f(d) * scale)));
}

// The block's total of a u64 (exact in any order); every thread must call it and gets the total.
WG_DEV u64 block_sum_u64(u64 s) {
    __shared__ u64 tot;
    if (wg_tid() == 0u) tot = 0u;
    wg_sync();
    if (s != 0u) wg_atomic_add(&tot, s);
    wg_sync();
    u64 r = tot;
    // the next call resets `tot`
    wg_sync();
    return r;
}

// The first level of every search's histogram: it does not depend on a prefix, so the pass that
// sums Z builds it once for all the searches of the row (the level where most elements land in a
// few digits, so where the atomics contend most).
struct Level0 {
    u32 n[WG_BLOCK];  // elements by digit
    u32 nw[WG_BLOCK]; // weighted elements by digit
    u64 w[WG_BLOCK];  // their mass
};

// The first element of the row's order at which a running total reaches `need` (1 <= need <= the
// row's total): the count of elements (by_count) or the sum of their weights. Returns its id; with
// `with_mass`, *through = the weight of every element up to it, it included. `l0` holds the first
// level (n for by_count, nw and w for the mass). Every thread must call it with the same
// arguments; all get the same results.
WG_DEV u32 search(const float* x, u32 v, const Level0* l0, bool by_count, bool with_mass, u64 need, u32 mb,
                  float scale, u64* through) {
    __shared__ u32 h_count[WG_BLOCK];
    __shared__ u64 h_mass[WG_BLOCK];
    // the sum of the ids in a digit: the id itself when the digit holds one element
    __shared__ u32 h_ids[WG_BLOCK];
    // what thread 0 tells the others: prefix, count above, mass above, done, the id when done
    __shared__ u64 bc[5];
    u32 tid = wg_tid();
    u64 prefix = 0u, above_n = 0u, above_w = 0u;
    u32 lv = 0u, id = 0u;
    for (;;) {
        h_count[tid] = lv == 0u ? (by_count ? l0->n[tid] : l0->nw[tid]) : 0u;
        h_mass[tid] = lv == 0u && with_mass ? l0->w[tid] : 0u;
        h_ids[tid] = 0u;
        wg_sync();
        for (u32 j = tid; j < v && lv > 0u; j += WG_BLOCK) {
            u32 b = wg_f_bits(x[j]);
            u64 key = ckey(b, j);
            if ((key >> (64u - 8u * lv)) != (prefix >> (64u - 8u * lv))) continue;
            u64 w = with_mass ? weight(b, mb, scale) : 0u;
            // a weightless element can never be where a mass is reached
            if (!by_count && w == 0u) continue;
            u32 d = (u32)(key >> (56u - 8u * lv)) & 255u;
            wg_atomic_add(&h_count[d], 1u);
            wg_atomic_add(&h_ids[d], j);
            if (w != 0u) wg_atomic_add(&h_mass[d], w);
        }
        wg_sync();
        if (tid == 0u) {
            u64 acc_n = above_n, acc_w = above_w;
            u32 d = 255u, c = 0u;
            for (;;) {
                c = h_count[d];
                u64 nn = acc_n + c, nw = acc_w + h_mass[d];
                if ((c > 0u && (by_count ? nn : nw) >= need) || d == 0u) break;
                acc_n = nn;
                acc_w = nw;
                d--;
            }
            bc[0] = prefix | ((u64)d << (56u - 8u * lv));
            bc[1] = acc_n;
            bc[2] = acc_w;
            // level 0 keeps no ids: the next level finds the element
            bc[3] = c <= 1u && lv > 0u;
            bc[4] = h_ids[d];
        }
        wg_sync();
        prefix = bc[0];
        above_n = bc[1];
        above_w = bc[2];
        id = (u32)bc[4];
        lv++;
        // thread 0 writes bc again only after the next level's two barriers
        if (bc[3] != 0u || lv == 8u) break;
    }
    // a full key holds the id (~id in its low 32 bits)
    if (lv == 8u) id = ~(u32)prefix;
    if (with_mass) *through = above_w + weight(wg_f_bits(x[id]), mb, scale);
    return id;
}

// The first element strictly after (pk, pi) in the order: its (key, id), to every thread.
WG_DEV void next_after(const float* x, u32 v, u32* pk, u32* pi) {
    u32 bk = 0u, bi = 0xffffffffu;
    for (u32 j = wg_tid(); j < v; j += WG_BLOCK) {
        u32 k = wg_okey(x[j]);
        // j only grows, so a tie keeps the earlier id
        if ((k < *pk || (k == *pk && j > *pi)) && k > bk) {
            bk = k;
            bi = j;
        }
    }
    wg_block_first(&bk, &bi);
    *pk = bk;
    *pi = bi;
}

// log-softmax at temperature 1 of logit l, given the row's maximum m and ln of the sum of
// exp(l - m); a row without a finite maximum gives NaN, a non-finite l stays itself.
WG_DEV float logprob(float l, float m, float ln_s, bool finite_m) {
    if (!finite_m) return wg_bits_f(0x7fc00000u);
    if ((wg_f_bits(l) & 0x7f800000u) == 0x7f800000u) return l;
    return (l - m) - ln_s;
}

WG_KERNEL void sample(const float* logits, const float* params, u32* ids, float* lps, u32 v, u32 k) {
    __shared__ u64 alt_key[SAMPLE_MAX_K];
    __shared__ u32 alt_n;
    __shared__ Level0 l0;
    u32 row = wg_bid_x(), tid = wg_tid();
    const float* x = logits + (u64)row * v;
    const float* p = params + 4ull * row;
    u64 out = (u64)row * (1u + k);
    // 1. the head of the order: the greedy token, and the row's maximum
    u32 hk = 0u, hi = 0xffffffffu;
    for (u32 j = tid; j < v; j += WG_BLOCK) {
        u32 kk = wg_okey(x[j]);
        if (kk > hk) {
            hk = kk;
            hi = j;
        }
    }
    wg_block_first(&hk, &hi);
    u32 mb = unkey(hk);
    float m = wg_bits_f(mb);
    bool finite_m = hk > 1u && (mb & 0x7f800000u) != 0x7f800000u;
    // 2. the row's parameters, read as the reference's row_params reads them: greedy unless the
    // scale is a normal positive number and top_k is not 1; top_k an integer-valued f32 in
    // 1..2^24, anything else "all"
    u32 sb = wg_f_bits(p[0]), kb = wg_f_bits(p[1]);
    u32 top_k = kb >= 0x3f800000u && kb < 0x4b800000u ? (u32)p[1] : 0u;
    bool sampling = sb >= 0x00800000u && sb < 0x7f800000u && top_k != 1u;
    float scale = p[0];
    // 3. one pass for the logprobs' sum of exp(l - m) over the finite logits and, for what the
    // searches need, Z and the first level of their histograms
    bool count_search = (sampling && top_k != 0u && top_k < v) || k > SAMPLE_ROUNDS_K;
    l0.n[tid] = 0u;
    l0.nw[tid] = 0u;
    l0.w[tid] = 0u;
    wg_sync();
    u64 z = 0u;
    float s = 0.0f;
    for (u32 j = tid; j < v; j += WG_BLOCK) {
        u32 b = wg_f_bits(x[j]);
        u32 d = wg_okey(wg_bits_f(b)) >> 24;
        if (count_search) wg_atomic_add(&l0.n[d], 1u);
        u64 w = sampling ? weight(b, mb, scale) : 0u;
        if (w != 0u) {
            z += w;
            wg_atomic_add(&l0.nw[d], 1u);
            wg_atomic_add(&l0.w[d], w);
        }
        if (finite_m && (b & 0x7f800000u) != 0x7f800000u) s += wg_exp(x[j] - m);
    }
    z = block_sum_u64(z);
    s = wg_block_sum(s);
    u32 token = hi;
    if (sampling && z != 0u) {
        // 4. the cut: the earlier (larger key) of top-k's k-th element and top-p's; 0 keeps all
        u64 cut = 0u, kept = z, through = 0u;
        if (top_k != 0u && top_k < v) {
            u32 j = search(x, v, &l0, true, true, top_k, mb, scale, &through);
            cut = ckey(wg_f_bits(x[j]), j);
            kept = through;
        }
        u32 tp = fraction24(p[2]);
        if (tp < SAMPLE_ONE24) {
            u64 need = scale24(z, tp);
            u32 j = search(x, v, &l0, false, true, need == 0u ? 1u : need, mb, scale, &through);
            u64 c = ckey(wg_f_bits(x[j]), j);
            if (c > cut) {
                cut = c;
                kept = through;
            }
        }
        // 5. the draw: the first kept token whose running mass passes floor(M u)
        u32 u = fraction24(p[3]);
        if (u > SAMPLE_ONE24 - 1u) u = SAMPLE_ONE24 - 1u;
        token = search(x, v, &l0, false, true, scale24(kept, u) + 1u, mb, scale, &through);
    }
    float ln_s = wg_log(s);
    if (tid == 0u) {
        ids[out] = token;
        lps[out] = logprob(x[token], m, ln_s, finite_m);
    }
    // 6. the K best, in order, from the head
    if (k <= SAMPLE_ROUNDS_K) {
        u32 pk = hk, pi = hi;
        for (u32 r = 0u; r < k; r++) {
            if (r > 0u) next_after(x, v, &pk, &pi);
            if (tid == 0u) {
                ids[out + 1u + r] = pi;
                lps[out + 1u + r] = logprob(x[pi], m, ln_s, finite_m);
            }
        }
        return;
    }
    u64 unused = 0u;
    u32 kth = search(x, v, &l0, true, false, k, mb, scale, &unused);
    u64 last = ckey(wg_f_bits(x[kth]), kth);
    if (tid == 0u) alt_n = 0u;
    wg_sync();
    // exactly k keys are >= the k-th's
    for (u32 j = tid; j < v; j += WG_BLOCK) {
        u64 key = ckey(wg_f_bits(x[j]), j);
        if (key >= last) alt_key[wg_atomic_add(&alt_n, 1u)] = key;
    }
    wg_sync();
    // each of the k finds its place by counting the larger keys
    if (tid < k) {
        u64 key = alt_key[tid];
        u32 rank = 0u;
        for (u32 i = 0u; i < k; i++) rank += alt_key[i] > key ? 1u : 0u;
        u32 j = ~(u32)key;
        ids[out + 1u + rank] = j;
        lps[out + 1u + rank] = logprob(x[j], m, ln_s, finite_m);
    }
}
