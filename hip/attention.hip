// attention: q [T, Hq, Dh], k/v [S, Hkv, Dh] (a cache of capacity S) -> o [T, Hq, Dh].
// Query t sits at position n_past + t and attends causally to keys 0..=n_past+t; query head h
// reads kv head h / (Hq / Hkv) (GQA). Scores scaled by `scale`, softmax in f32. Decode (T = 1)
// and prefill (T > 1) share this kernel.
//
// One block per (t, h) query row, Dh <= WG_BLOCK (thread d owns output dim d). Keys are taken
// AT_CH at a time: thread j scores key j of the chunk on its own (the query from shared memory,
// the key row 16 bytes at a time where aligned), so a chunk's scores need no shuffles and every
// thread has its key's loads in flight at once (one wave per key, reduced by shuffles, left a
// decode step waiting on one dependent chain per key); then an online softmax (running max and
// sum) rescales the accumulator and adds this chunk's p · V. No key past n_past + t is ever read.
// grid.x = T * Hq.
#include "wgllm_hip.h"
#ifndef T_Q
#define T_Q float
#endif
#ifndef T_KV
#define T_KV float
#endif
#ifndef T_O
#define T_O float
#endif
#define AT_CH WG_BLOCK

WG_KERNEL void attention(const T_Q* q, const T_KV* k, const T_KV* v, T_O* o, u32 hq, u32 hkv, u32 dh, u32 n_past,
                         float scale) {
    __shared__ float qs[WG_BLOCK];
    __shared__ float ps[AT_CH];
    u32 row = wg_bid_x();
    u32 t = row / hq, h = row % hq;
    u32 kh = h / (hq / hkv);
    u32 tid = wg_tid();
    if (tid < dh) qs[tid] = ld(q, (u64)row * dh + tid);
    wg_sync();
    u32 kv_len = n_past + t + 1u;
    const u32 per = 16u / (u32)sizeof(T_KV);
    bool vec = ((u64)k & 15u) == 0u && ((u64)dh * sizeof(T_KV)) % 16u == 0u;
    float mx = wg_bits_f(0xff800000u), l = 0.0f, acc = 0.0f;
    for (u32 c0 = 0; c0 < kv_len; c0 += AT_CH) {
        u32 cn = kv_len - c0 < AT_CH ? kv_len - c0 : AT_CH;
        if (tid < cn) {
            u64 kb = ((u64)(c0 + tid) * hkv + kh) * dh;
            float s = 0.0f;
            if (vec) {
                for (u32 d = 0; d < dh; d += per) {
                    float kv[8];
                    ld16(k, kb + d, kv);
                    for (u32 e = 0; e < per; e++) s += qs[d + e] * kv[e];
                }
            } else {
                for (u32 d = 0; d < dh; d++) s += qs[d] * ld(k, kb + d);
            }
            ps[tid] = s * scale;
        }
        wg_sync();
        float sc = tid < cn ? ps[tid] : wg_bits_f(0xff800000u);
        float cm = wg_block_max(sc);
        float m_new = cm > mx ? cm : mx;
        float corr = wg_exp(mx - m_new);
        float p = tid < cn ? wg_exp(sc - m_new) : 0.0f;
        if (tid < cn) ps[tid] = p;
        float psum = wg_block_sum(p);
        l = l * corr + psum;
        if (tid < dh) {
            float a = acc * corr;
#pragma unroll 4
            for (u32 j = 0; j < cn; j++) a += ps[j] * ld(v, ((u64)(c0 + j) * hkv + kh) * dh + tid);
            acc = a;
        }
        mx = m_new;
        wg_sync();
    }
    if (tid < dh) st(o, (u64)row * dh + tid, acc / l);
}
