// rms_norm_rope: the fused per-head q/k norm + NeoX RoPE.
// x [T, H, Dh], w [Dh], pos [T] (u32), cos/sin [P, R/2] (f32) -> y [T, H, Dh]
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
                             T_Y* y, u32 h, u32 dh, u32 half, u32 max_pos, float eps) {
    u32 row = wg_bid_x();
    u32 t = row / h;
    u64 base = (u64)row * dh;
    u32 tid = wg_tid();
    float inv = wg_inv_rms_row(x, base, dh, eps);
    u32 p = pos[t];
    bool ok = p < max_pos;
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
