// gated_attention: Qwen3.5's gated full attention between the projections and o_proj.
// qg [T, Hq, 2*Dh] (per head: query | output gate), k [T, Hkv, Dh], v [T, Hkv, Dh], q_norm [Dh],
// k_norm [Dh], cos/sin [P, R/2] (f32) -> o [T, Hq, Dh], k_cache / v_cache [S, Hkv, Dh] (in-out).
// q = rope(rms_norm(q, 1 + q_norm)), k = rope(rms_norm(k, 1 + k_norm)) at positions n_past + t
// (NeoX rotate-half on the first R = 2 * half dims); k and v go into cache rows n_past..n_past+T;
// o = attention(q, cache, n_past, scale) * sigmoid(gate). Two launches, in this order:
//   gated_attention_kv  one block per (t, kv head): k normed and rotated, k and v stored into the
//                       caches in their dtype (the attention then reads them as stored, so the
//                       result is the composition norm -> rope -> cache -> attention -> gate)
//   gated_attention     one block per (t, q head), Dh <= WG_BLOCK (thread d owns dim d): q normed
//                       and rotated into shared memory, then attention.hip's online softmax over
//                       keys 0..=n_past+t of the caches, then the gate.
// Every operand has its own T_* (the output's dtype is o's, never qg's). Math in f32.
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
#ifndef T_O
#define T_O float
#endif
#ifndef T_KC
#define T_KC float
#endif
#ifndef T_VC
#define T_VC float
#endif
#define GA_CH WG_BLOCK

// grid.x = T * Hkv. No limit on Dh (the block strides over it).
WG_KERNEL void gated_attention_kv(const T_Q*, const T_K* k, const T_V* v, const T_QN*, const T_KN* kn,
                                  const float* cos_t, const float* sin_t, T_O*, T_KC* kc, T_VC* vc, u32 hkv, u32 dh,
                                  u32 half, u32 n_past, float eps) {
    u32 row = wg_bid_x(), tid = wg_tid();
    u32 pos = n_past + row / hkv;
    u64 base = (u64)row * dh;
    // cache row (n_past + t, h) = row n_past * hkv + (t * hkv + h)
    u64 ob = ((u64)n_past * hkv + row) * dh;
    float inv = wg_inv_rms_row(k, base, dh, eps);
    for (u32 i = tid; i < half; i += WG_BLOCK) {
        float a = ld(k, base + i) * inv * (1.0f + ld(kn, i));
        float b = ld(k, base + i + half) * inv * (1.0f + ld(kn, i + half));
        float c = cos_t[(u64)pos * half + i], s = sin_t[(u64)pos * half + i];
        st(kc, ob + i, a * c - b * s);
        st(kc, ob + i + half, b * c + a * s);
    }
    for (u32 j = 2u * half + tid; j < dh; j += WG_BLOCK) st(kc, ob + j, ld(k, base + j) * inv * (1.0f + ld(kn, j)));
    for (u32 j = tid; j < dh; j += WG_BLOCK) st(vc, ob + j, ld(v, base + j));
}

// grid.x = T * Hq. Runs after gated_attention_kv (it reads the rows that one wrote).
WG_KERNEL void gated_attention(const T_Q* qg, const T_K*, const T_V*, const T_QN* qn, const T_KN*,
                               const float* cos_t, const float* sin_t, T_O* o, const T_KC* kc, const T_VC* vc,
                               u32 hq, u32 hkv, u32 dh, u32 half, u32 n_past, float scale, float eps) {
    __shared__ float nq[WG_BLOCK];
    __shared__ float qs[WG_BLOCK];
    __shared__ float ps[GA_CH];
    u32 row = wg_bid_x();
    u32 t = row / hq, h = row % hq;
    u32 kh = h / (hq / hkv);
    u32 tid = wg_tid(), wave = wg_wave();
    u32 lane = tid % wave, wid = tid / wave, nw = WG_BLOCK / wave;
    u64 qb = (u64)row * 2u * dh;
    u32 pos = n_past + t;
    // the query's norm (1 + q_norm), then its rotation: thread d needs its partner's normed value
    float xq = tid < dh ? ld(qg, qb + tid) : 0.0f;
    float inv = wg_inv_rms(xq * xq, dh, eps);
    float y = tid < dh ? xq * inv * (1.0f + ld(qn, tid)) : 0.0f;
    nq[tid] = y;
    wg_sync();
    if (tid < half) {
        u64 f = (u64)pos * half + tid;
        y = y * cos_t[f] - nq[tid + half] * sin_t[f];
    } else if (tid < 2u * half) {
        u64 f = (u64)pos * half + (tid - half);
        y = y * cos_t[f] + nq[tid - half] * sin_t[f];
    }
    qs[tid] = y;
    wg_sync();
    u32 kv_len = pos + 1u;
    float mx = wg_bits_f(0xff800000u), l = 0.0f, acc = 0.0f;
    for (u32 c0 = 0; c0 < kv_len; c0 += GA_CH) {
        u32 cn = kv_len - c0 < GA_CH ? kv_len - c0 : GA_CH;
        // one wave per key: lanes stride the head dim, a wave reduction gives the score
        for (u32 j = wid; j < cn; j += nw) {
            u64 kb = ((u64)(c0 + j) * hkv + kh) * dh;
            float s = 0.0f;
            for (u32 d = lane; d < dh; d += wave) s += qs[d] * ld(kc, kb + d);
            s = wg_wave_sum(s);
            if (lane == 0u) ps[j] = s * scale;
        }
        wg_sync();
        float sc = tid < cn ? ps[tid] : wg_bits_f(0xff800000u);
        float m_new = wg_block_max(sc);
        m_new = m_new > mx ? m_new : mx;
        float corr = wg_exp(mx - m_new);
        float p = tid < cn ? wg_exp(sc - m_new) : 0.0f;
        if (tid < cn) ps[tid] = p;
        l = l * corr + wg_block_sum(p);
        if (tid < dh) {
            float a = acc * corr;
            for (u32 j = 0; j < cn; j++) a += ps[j] * ld(vc, ((u64)(c0 + j) * hkv + kh) * dh + tid);
            acc = a;
        }
        mx = m_new;
        wg_sync();
    }
    if (tid < dh) {
        float g = ld(qg, qb + dh + tid);
        st(o, (u64)row * dh + tid, acc / l / (1.0f + wg_exp(-g)));
    }
}
