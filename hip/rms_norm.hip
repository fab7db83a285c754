// rms_norm: x [R, D], w [D] -> y [R, D] = x / sqrt(mean(x^2) + eps) * w (or * (1 + w) with
// `unit`). One block per row; sum of squares in f32 with a wave + block reduction.
// grid.x = R.
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

WG_KERNEL void rms_norm(const T_X* x, const T_W* w, T_Y* y, u32 d, float eps, u32 unit) {
    u64 base = (u64)wg_bid_x() * d;
    u32 tid = wg_tid();
    float inv = wg_inv_rms_row(x, base, d, eps);
    for (u32 j = tid; j < d; j += WG_BLOCK) {
        float g = ld(w, j);
        if (unit != 0u) g += 1.0f;
        st(y, base + j, ld(x, base + j) * inv * g);
    }
}
