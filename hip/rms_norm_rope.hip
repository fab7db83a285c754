// rms_norm_rope: the fused per-head q/k norm + NeoX RoPE.
// x [T, H, Dh], w [Dh] (or [H, Dh], a row a head: wstride = Dh), pos [T] (u32), cos/sin [P, R/2]
// (f32) -> y [T, H, Dh]
// = rope(rms_norm(x, w, eps)) on the first R = 2 * half dims; the rest are only normalised.
// A position past the table (P) writes NaN: the reference refuses it, the device cannot.
// One block per (t, h) head row. grid.x = T * H.
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

WG_KERNEL void rms_norm_rope(const T_X* x, const T_W* w, const u32* pos, const float* cos_t, const float* sin_t,
                             T_Y* y, u32 h, u32 dh, u32 half, u32 max_pos, float eps, u32 wstride) {
    u32 row = wg_bid_x();
    u32 t = row / h;
    u64 base = (u64)row * dh;
    u32 tid = wg_tid();
    w += (u64)(row % h) * wstride;
    u32 p = pos[t];
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
            st(y, base + tid, a * c - b * s);
            st(y, base + tid + half, b * c + a * s);
        } else if (tid >= 2u * half && tid < dh) {
            st(y, base + tid, nx[tid]);
        }
        return;
    }
    float inv = wg_inv_rms_row(x, base, dh, eps);
    for (u32 i = tid; i < half; i += WG_BLOCK) {
        float a = ld(x, base + i) * inv * ld(w, i);
        float b = ld(x, base + i + half) * inv * ld(w, i + half);
        float c = ok ? cos_t[(u64)p * half + i] : wg_bits_f(0x7fc00000u);
        float s = ok ? sin_t[(u64)p * half + i] : wg_bits_f(0x7fc00000u);
        st(y, base + i, a * c - b * s);
        st(y, base + i + half, b * c + a * s);
    }
    for (u32 j = 2u * half + tid; j < dh; j += WG_BLOCK) st(y, base + j, ld(x, base + j) * inv * ld(w, j));
}
