// The paged attention ops over a layer's K / V pools [NB, BS, Hkv, Dh] (src/op/paged.rs):
//   paged_attention: q [T, Hq, Dh], k_pool, v_pool, block_tables [S, MB], seqs [S, 3] -> o [T, Hq, Dh]
//   paged_gated_attention (Qwen3.5): qg [T, Hq, 2 Dh], k, v [T, Hkv, Dh], q_norm, k_norm [Dh],
//     cos, sin [P, R/2] (f32), block_tables, seqs -> o [T, Hq, Dh], k_pool, v_pool (in-out), in two
//     launches: paged_gated_attention_kv writes each new token's normed, rotated k and its v into
//     the pool row of its position, then paged_gated_attention attends over the pools as stored.
// Query i of sequence s sits at position kv_len - q_count + i and attends to its keys 0..=position,
// key j being pool row block_tables[s][j / BS] * BS + j % BS; query head h reads kv head
// h / (Hq / Hkv).
//
// Batch invariance: one block per (query row, query head) attends exactly its own keys, walked from
// key 0 in fixed chunks of PA_CH with fixed-shape reductions (pa_attend). Nothing in a row's
// arithmetic depends on T, S, the other rows, or where its sequence's rows sit in q, so a query
// gives the same bits as a decode step, inside a prefill chunk of any size, or next to any other
// sequences (src/parity/paged_invariance.rs). Keys past a row's position are never loaded: an
// unused pool row may hold NaN, and 0 * NaN is NaN, so masking by a zero weight would leak it.
// Contents the host checks (op::check_paged_batch) are guarded only so that nothing is read or
// written out of place: a row whose description is inconsistent, or that reaches a block id >= NB,
// comes out NaN (and the gated op writes no key for it).
// Dh <= WG_BLOCK (qs holds one query). grid.x = T * Hq (attention) or T * Hkv (the key writer).
#include "wgllm_hip.h"
#ifndef T_Q
#define T_Q float
#endif
#ifndef T_K
#define T_K float
#endif
#ifndef T_V
#define T_V float
#endif
#ifndef T_QN
#define T_QN float
#endif
#ifndef T_KN
#define T_KN float
#endif
#ifndef T_KV
#define T_KV float
#endif
#ifndef T_O
#define T_O float
#endif
#define PA_CH WG_BLOCK          // keys per chunk: one per thread in the score phase
#define PA_NG 16u               // groups of the max / sum reductions over a chunk
#define PA_GS (PA_CH / PA_NG)   // scores per group
#define PA_NO_ROW 0xffffffffu   // a key whose block id is not in the pool

WG_DEV float pa_nan() { return wg_bits_f(0x7fc00000u); }
WG_DEV float pa_max(float a, float b) { return b > a ? b : a; }

// A query row's place: its sequence s, its key count kv (position + 1), and whether the
// sequence's description holds together.
struct pa_row {
    u32 s, kv;
    bool ok;
};

// The sequence of query row t: the last whose first row is <= t (binary search, the rows are
// packed in order), checked against t and the table length. Every thread computes it (the same
// loads, so the same answer): the block's branch on `ok` is uniform.
WG_DEV pa_row pa_find(const u32* seqs, u32 ns, u32 t, u32 mb, u32 bs) {
    u32 lo = 0u, hi = ns;
    while (hi - lo > 1u) {
        u32 mid = (lo + hi) / 2u;
        if (seqs[(u64)mid * 3u] <= t) lo = mid;
        else hi = mid;
    }
    u32 start = seqs[(u64)lo * 3u], cnt = seqs[(u64)lo * 3u + 1u], kv = seqs[(u64)lo * 3u + 2u];
    pa_row r;
    r.s = lo;
    r.ok = start <= t && t - start < cnt && cnt <= kv && (u64)kv <= (u64)mb * bs;
    r.kv = r.ok ? kv - cnt + (t - start) + 1u : 0u;
    return r;
}

// qs . k[base .. base + dh), the dims summed in order. `vec` (16-byte aligned rows) reads 16 bytes
// at a time; the sum is the same either way.
WG_DEV float pa_dot(const float* qs, const T_KV* k, u64 base, u32 dh, bool vec) {
    float s = 0.0f;
    if (vec) {
        const u32 w = 16u / (u32)sizeof(T_KV);
        float e[8];
        for (u32 d = 0; d < dh; d += w) {
            ld16(k, base + d, e);
            for (u32 i = 0; i < w; i++) s += qs[d + i] * e[i];
        }
    } else {
        for (u32 d = 0; d < dh; d++) s += qs[d] * ld(k, base + d);
    }
    return s;
}

// softmax(qs . K) V over keys 0..kv of kv head kh of the sequence whose block-table row is `tb`;
// qs is staged (scaled). Returns output dim tid for tid < dh (0 elsewhere). Every thread calls it.
// Per chunk of PA_CH keys:
//   1. thread j scores key c0 + j (its pool row kept in rows[j] for the P.V phase)
//   2. the chunk max: PA_NG groups of PA_GS, then every thread reads the PA_NG maxima
//   3. p_j = exp(s_j - m) into sc; every thread rescales by the same alpha (one running max m)
//   4. P.V: thread (r, c) owns output dim c and the keys j = r (mod R), R = WG_BLOCK / dh; a V row
//      is read by dh adjacent threads
// At the end the R partial outputs and the per-thread denominators are added in a fixed order.
WG_DEV float pa_attend(const float* qs, const T_KV* kp, const T_KV* vp, const u32* tb, u32 kv, u32 kh, u32 hkv,
                       u32 dh, u32 bs, u32 nb) {
    __shared__ float sc[PA_CH];
    __shared__ u32 rows[PA_CH];
    __shared__ float red[PA_NG];
    __shared__ float accs[WG_BLOCK];
    u32 tid = wg_tid();
    u32 nr = WG_BLOCK / dh, r = tid / dh, c = tid % dh;
    u64 rowlen = (u64)hkv * dh, head = (u64)kh * dh;
    bool vec = (dh * (u32)sizeof(T_KV)) % 16u == 0u && ((u64)kp & 15u) == 0u;
    float m = wg_bits_f(0xff800000u), l = 0.0f, acc = 0.0f;
    for (u32 c0 = 0; c0 < kv; c0 += PA_CH) {
        u32 cn = kv - c0 < PA_CH ? kv - c0 : PA_CH;
        float s = wg_bits_f(0xff800000u);
        if (tid < cn) {
            u32 j = c0 + tid;
            u32 blk = tb[j / bs];
            u32 pr = blk < nb ? blk * bs + j % bs : PA_NO_ROW;
            rows[tid] = pr;
            s = pr == PA_NO_ROW ? pa_nan() : pa_dot(qs, kp, pr * rowlen + head, dh, vec);
        }
        sc[tid] = s;
        wg_sync();
        if (tid < PA_NG) {
            float mx = sc[tid * PA_GS];
            for (u32 j = 1u; j < PA_GS; j++) mx = pa_max(mx, sc[tid * PA_GS + j]);
            red[tid] = mx;
        }
        wg_sync();
        float m_new = m;
        for (u32 g = 0; g < PA_NG; g++) m_new = pa_max(m_new, red[g]);
        float alpha = wg_exp(m - m_new);
        float p = tid < cn ? wg_exp(s - m_new) : 0.0f;
        l = l * alpha + p;
        acc *= alpha;
        m = m_new;
        sc[tid] = p;
        wg_sync();
        if (r < nr) {
            for (u32 j = r; j < cn; j += nr) {
                u32 pr = rows[j];
                acc += sc[j] * (pr == PA_NO_ROW ? pa_nan() : ld(vp, pr * rowlen + head + c));
            }
        }
        wg_sync();
    }
    sc[tid] = l;
    accs[tid] = acc;
    wg_sync();
    if (tid < PA_NG) {
        float z = 0.0f;
        for (u32 j = 0; j < PA_GS; j++) z += sc[tid * PA_GS + j];
        red[tid] = z;
    }
    wg_sync();
    float y = 0.0f;
    if (tid < dh) {
        float z = 0.0f, a = 0.0f;
        for (u32 g = 0; g < PA_NG; g++) z += red[g];
        for (u32 i = 0; i < nr; i++) a += accs[i * dh + tid];
        y = a / z;
    }
    return y;
}

WG_KERNEL void paged_attention(const T_Q* q, const T_KV* kp, const T_KV* vp, const u32* bt, const u32* seqs, T_O* o,
                               u32 hq, u32 hkv, u32 dh, u32 bs, u32 nb, u32 mb, u32 ns, float scale) {
    __shared__ float qs[WG_BLOCK];
    u32 row = wg_bid_x(), tid = wg_tid();
    u32 t = row / hq, h = row % hq;
    u64 orow = (u64)row * dh;
    pa_row r = pa_find(seqs, ns, t, mb, bs);
    if (!r.ok) {
        for (u32 d = tid; d < dh; d += WG_BLOCK) st(o, orow + d, pa_nan());
        return;  // the whole block (r is uniform): no barrier is left waiting
    }
    if (tid < dh) qs[tid] = ld(q, orow + tid) * scale;
    wg_sync();
    float y = pa_attend(qs, kp, vp, bt + (u64)r.s * mb, r.kv, h / (hq / hkv), hkv, dh, bs, nb);
    if (tid < dh) st(o, orow + tid, y);
}

// paged_gated_attention, first launch: block (t, g) writes token t's kv head g into the pool row of
// its position: k normed (x̂ (1 + k_norm)) and rotated (NeoX, the first 2 * half dims), v as is,
// both rounded to the pool's dtype by `st`. The norm is a fixed-shape block reduction, so a token's
// key does not depend on the batch either.
WG_KERNEL void paged_gated_attention_kv(const T_Q* qg, const T_K* k, const T_V* v, const T_QN* qn, const T_KN* kn,
                                        const float* cos_t, const float* sin_t, const u32* bt, const u32* seqs,
                                        T_O* o, T_KV* kp, T_KV* vp, u32 hq, u32 hkv, u32 dh, u32 bs, u32 nb, u32 mb,
                                        u32 ns, u32 half, float scale, float eps) {
    (void)qg;
    (void)qn;
    (void)o;
    (void)hq;
    (void)scale;
    u32 row = wg_bid_x(), tid = wg_tid();
    u32 t = row / hkv, g = row % hkv;
    pa_row r = pa_find(seqs, ns, t, mb, bs);
    if (!r.ok) return;  // uniform, as the block id below
    u32 pos = r.kv - 1u;
    u32 blk = bt[(u64)r.s * mb + pos / bs];
    if (blk >= nb) return;
    u64 src = (u64)row * dh;
    u64 dst = (((u64)blk * bs + pos % bs) * hkv + g) * dh;
    float inv = wg_inv_rms_row(k, src, dh, eps);
    for (u32 e = tid; e < half; e += WG_BLOCK) {
        float c = cos_t[(u64)pos * half + e], s = sin_t[(u64)pos * half + e];
        float a = ld(k, src + e) * inv * (1.0f + ld(kn, e));
        float b = ld(k, src + e + half) * inv * (1.0f + ld(kn, e + half));
        st(kp, dst + e, a * c - b * s);
        st(kp, dst + e + half, b * c + a * s);
    }
    for (u32 d = 2u * half + tid; d < dh; d += WG_BLOCK) st(kp, dst + d, ld(k, src + d) * inv * (1.0f + ld(kn, d)));
    for (u32 d = tid; d < dh; d += WG_BLOCK) st(vp, dst + d, ld(v, src + d));
}

// paged_gated_attention, second launch: block (t, h) norms (x̂ (1 + q_norm)) and rotates the query
// half of qg at the row's position into qs, attends over the pools (pa_attend, the new keys already
// written), and multiplies by sigmoid of the gate half.
WG_KERNEL void paged_gated_attention(const T_Q* qg, const T_K* k, const T_V* v, const T_QN* qn, const T_KN* kn,
                                     const float* cos_t, const float* sin_t, const u32* bt, const u32* seqs, T_O* o,
                                     T_KV* kp, T_KV* vp, u32 hq, u32 hkv, u32 dh, u32 bs, u32 nb, u32 mb, u32 ns,
                                     u32 half, float scale, float eps) {
    (void)k;
    (void)v;
    (void)kn;
    __shared__ float qs[WG_BLOCK];
    u32 row = wg_bid_x(), tid = wg_tid();
    u32 t = row / hq, h = row % hq;
    u64 qrow = (u64)row * 2u * dh, orow = (u64)row * dh;
    pa_row r = pa_find(seqs, ns, t, mb, bs);
    if (!r.ok) {
        for (u32 d = tid; d < dh; d += WG_BLOCK) st(o, orow + d, pa_nan());
        return;  // uniform
    }
    u32 pos = r.kv - 1u;
    float inv = wg_inv_rms_row(qg, qrow, dh, eps);
    for (u32 e = tid; e < half; e += WG_BLOCK) {
        float c = cos_t[(u64)pos * half + e], s = sin_t[(u64)pos * half + e];
        float a = ld(qg, qrow + e) * inv * (1.0f + ld(qn, e));
        float b = ld(qg, qrow + e + half) * inv * (1.0f + ld(qn, e + half));
        qs[e] = (a * c - b * s) * scale;
        qs[e + half] = (b * c + a * s) * scale;
    }
    for (u32 d = 2u * half + tid; d < dh; d += WG_BLOCK) qs[d] = ld(qg, qrow + d) * inv * (1.0f + ld(qn, d)) * scale;
    wg_sync();
    float y = pa_attend(qs, kp, vp, bt + (u64)r.s * mb, r.kv, h / (hq / hkv), hkv, dh, bs, nb);
    if (tid < dh) st(o, orow + tid, y / (1.0f + wg_exp(-ld(qg, qrow + dh + tid))));
}
