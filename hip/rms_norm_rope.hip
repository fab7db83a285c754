// rms_norm_rope: the fused per-head q/k norm + NeoX RoPE.
// x [T, H, Dh], w [Dh] (or [H, Dh], a row a head: wstride = Dh), pos [T] (u32), cos/sin [P, R/2]
// (f32) -> y [T, H, Dh]
// = rope(rms_norm(x, w, eps)) on the first R = 2 * half dims; the rest are only normalised.
// A position past the table (P) writes NaN: the reference refuses it, the device cannot.
// One block per (t, h) head row. grid.x = T * H.
// rms_norm_rope_kv: the same rows of a stacked q/k/v projection x [T, Hq + 2 Hkv, Dh] (per token
// the q, k and v heads), the k rows stored into k_pool [NB, BS, Hkv, Dh] at row slots[t] and the
// v rows copied into v_pool (rounded to T_KV; a slot past the pool, rows = NB * BS, is skipped).
// grid.x = T * (Hq + 2 Hkv).
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_W
#define T_W float
#endif
#ifndef T_Y
#define T_Y float
#endif
#ifndef T_KV
#define T_KV float
#endif

// One head row: x[base..base + dh] normed with w (already at the head's row), rotated at position p,
// stored at y[dst..]. Every thread of the block calls it (the reduction synchronises).
template <typename TO>
WG_DEV void norm_rope_row(const T_X* x, const T_W* w, const float* cos_t, const float* sin_t, u64 base, TO* y, u64 dst,
                          u32 p, u32 dh, u32 half, u32 max_pos, float eps) {
    u32 tid = wg_tid();
    bool ok = p < max_pos;
    if (dh <= WG_BLOCK) {
        // a head row a thread an element: x, w and the row's cos / sin are all loaded before the
        // norm's reduction (one round trip of latency instead of three), the normalised row goes
        // through shared memory to the thread that rotates its pair
        __shared__ float nx[WG_BLOCK];
        float xv = 0.0f, wv = 0.0f, c = 0.0f, s = 0.0f;
        if (tid < dh) {
            xv = ld(x, base + tid);
            wv = ld(w, tid);
        }
        if (tid < half) {
            c = ok ? cos_t[(u64)p * half + tid] : wg_bits_f(0x7fc00000u);
            s = ok ? sin_t[(u64)p * half + tid] : wg_bits_f(0x7fc00000u);
        }
        float inv = wg_inv_rms(xv * xv, dh, eps);
        if (tid < dh) nx[tid] = xv * inv * wv;
        wg_sync();
        if (tid < half) {
            float a = nx[tid], b = nx[tid + half];
            st(y, dst + tid, a * c - b * s);
            st(y, dst + tid + half, b * c + a * s);
        } else if (tid >= 2u * half && tid < dh) {
            st(y, dst + tid, nx[tid]);
        }
        return;
    }
    float inv = wg_inv_rms_row(x, base, dh, eps);
    for (u32 i = tid; i < half; i += WG_BLOCK) {
        float a = ld(x, base + i) * inv * ld(w, i);
        float b = ld(x, base + i + half) * inv * ld(w, i + half);
        float c = ok ? cos_t[(u64)p * half + i] : wg_bits_f(0x7fc00000u);
        float s = ok ? sin_t[(u64)p * half + i] : wg_bits_f(0x7fc00000u);
        st(y, dst + i, a * c - b * s);
        st(y, dst + i + half, b * c + a * s);
    }
    for (u32 j = 2u * half + tid; j < dh; j += WG_BLOCK) st(y, dst + j, ld(x, base + j) * inv * ld(w, j));
}

WG_KERNEL void rms_norm_rope(const T_X* x, const T_W* w, const u32* pos, const float* cos_t, const float* sin_t,
                             T_Y* y, u32 h, u32 dh, u32 half, u32 max_pos, float eps, u32 wstride) {
    u32 row = wg_bid_x();
    u64 base = (u64)row * dh;
    norm_rope_row(x, w + (u64)(row % h) * wstride, cos_t, sin_t, base, y, base, pos[row / h], dh, half, max_pos, eps);
}

WG_KERNEL void rms_norm_rope_kv(const T_X* x, const T_W* w, const u32* pos, const float* cos_t, const float* sin_t,
                                const u32* slots, T_Y* q, T_KV* kp, T_KV* vp, u32 hq, u32 hkv, u32 dh, u32 half,
                                u32 max_pos, float eps, u32 wstride, u32 rows) {
    u32 heads = hq + 2u * hkv;
    u32 row = wg_bid_x();
    u32 t = row / heads, h = row % heads;
    u64 base = (u64)row * dh;
    if (h < hq) {
        norm_rope_row(x, w + (u64)h * wstride, cos_t, sin_t, base, q, ((u64)t * hq + h) * dh, pos[t], dh, half,
                      max_pos, eps);
        return;
    }
    u32 slot = slots[t];
    if (slot >= rows) return;  // the whole block: the slot is the token's
    if (h < hq + hkv) {
        u64 dst = ((u64)slot * hkv + (h - hq)) * dh;
        norm_rope_row(x, w + (u64)h * wstride, cos_t, sin_t, base, kp, dst, pos[t], dh, half, max_pos, eps);
        return;
    }
    u64 dst = ((u64)slot * hkv + (h - hq - hkv)) * dh;
    for (u32 j = wg_tid(); j < dh; j += WG_BLOCK) st(vp, dst + j, ld(x, base + j));
}
