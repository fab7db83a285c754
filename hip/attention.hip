// attention: q [T, Hq, Dh], k/v [S, Hkv, Dh] (a cache of capacity S) -> o [T, Hq, Dh].
// Query t sits at position n_past + t and attends causally to keys 0..=n_past+t; query head h
// reads kv head h / (Hq / Hkv) (GQA). Scores scaled by `scale`, softmax in f32. Decode (T = 1)
// and prefill (T > 1) share this kernel.
//
// One block per (t, h) query row, Dh <= WG_BLOCK. Keys are taken AT_CH at a time: thread j scores
// key j of the chunk on its own (the query from shared memory, the key row 16 bytes at a time
// where aligned, AT_U pieces loaded before any is summed), so a chunk's scores need no shuffles;
// then an online softmax (running max and sum) rescales the accumulator and adds the chunk's p · V.
// p · V spreads over the whole block: the keys are dealt to slices of Dh / AT_VW threads, each
// thread AT_VW output dims (16 bytes of a V row where aligned) and AT_U keys' loads in flight; the
// slices' partials are then summed in slice order. A decode step's latency is these chains of
// loads, so each thread waits on a few round trips, not one a key.
// No key past n_past + t is ever read.
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
#define AT_U 8u
#define AT_VW 4u

WG_KERNEL void attention(const T_Q* q, const T_KV* k, const T_KV* v, T_O* o, u32 hq, u32 hkv, u32 dh, u32 n_past,
                         float scale) {
    __shared__ float qs[WG_BLOCK];
    __shared__ float ps[AT_CH];
    __shared__ float pv[WG_BLOCK * AT_VW];
    u32 row = wg_bid_x();
    u32 t = row / hq, h = row % hq;
    u32 kh = h / (hq / hkv);
    u32 tid = wg_tid();
    if (tid < dh) qs[tid] = ld(q, (u64)row * dh + tid);
    wg_sync();
    u32 kv_len = n_past + t + 1u;
    const u32 per = 16u / (u32)sizeof(T_KV);
    bool kvec = ((u64)k & 15u) == 0u && ((u64)dh * sizeof(T_KV)) % 16u == 0u;
    // p · V: slices of `tps` threads, each thread `vw` consecutive dims
    bool vvec = sizeof(T_KV) == 4u && ((u64)v & 15u) == 0u && dh % AT_VW == 0u;
    u32 vw = vvec ? AT_VW : 1u;
    u32 tps = dh / vw, ns = WG_BLOCK / tps;
    u32 slice = tid / tps, d0 = (tid % tps) * vw;
    float mx = wg_bits_f(0xff800000u), l = 0.0f, acc = 0.0f;
    for (u32 c0 = 0; c0 < kv_len; c0 += AT_CH) {
        u32 cn = kv_len - c0 < AT_CH ? kv_len - c0 : AT_CH;
        if (tid < cn) {
            u64 kb = ((u64)(c0 + tid) * hkv + kh) * dh;
            float s = 0.0f;
            if (kvec) {
                for (u32 d = 0; d < dh; d += AT_U * per) {
                    float kv[AT_U][8];
                    for (u32 u = 0; u < AT_U; u++)
                        if (d + u * per < dh) ld16(k, kb + d + u * per, kv[u]);
                    for (u32 u = 0; u < AT_U; u++) {
                        if (d + u * per >= dh) break;
                        for (u32 e = 0; e < per; e++) s += qs[d + u * per + e] * kv[u][e];
                    }
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
        float a[AT_VW] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (slice < ns) {
            for (u32 j0 = slice; j0 < cn; j0 += AT_U * ns) {
                float vv[AT_U][8];
                for (u32 u = 0; u < AT_U; u++) {
                    u32 j = j0 + u * ns;
                    if (j < cn) {
                        u64 vb = ((u64)(c0 + j) * hkv + kh) * dh + d0;
                        if (vvec) {
                            ld16(v, vb, vv[u]);
                        } else {
                            vv[u][0] = ld(v, vb);
                        }
                    }
                }
                for (u32 u = 0; u < AT_U; u++) {
                    u32 j = j0 + u * ns;
                    if (j >= cn) break;
                    for (u32 e = 0; e < vw; e++) a[e] += ps[j] * vv[u][e];
                }
            }
            for (u32 e = 0; e < vw; e++) pv[slice * dh + d0 + e] = a[e];
        }
        wg_sync();
        if (tid < dh) {
            float s = 0.0f;
            for (u32 i = 0; i < ns; i++) s += pv[i * dh + tid];
            acc = acc * corr + s;
        }
        mx = m_new;
        wg_sync();
    }
    if (tid < dh) st(o, (u64)row * dh + tid, acc / l);
}
