// rms_norm_gated: Qwen3.5's linear-attention output norm, norm before gate.
// x [R, D], z [R, D], w [D] -> y [R, D] = x / sqrt(mean(x^2) + eps) * w * silu(z) (a plain
// weight, not 1 + w). One block per row; the sum of squares in f32 (wave + block reduction).
// grid.x = R.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_Z
#define T_Z float
#endif
#ifndef T_W
#define T_W float
#endif
#ifndef T_Y
#define T_Y float
#endif

WG_KERNEL void rms_norm_gated(const T_X* x, const T_Z* z, const T_W* w, T_Y* y, u32 d, float eps) {
    u64 base = (u64)wg_bid_x() * d;
    float inv = wg_inv_rms_row(x, base, d, eps);
    for (u32 j = wg_tid(); j < d; j += WG_BLOCK) {
        float g = ld(z, base + j);
        st(y, base + j, ld(x, base + j) * inv * ld(w, j) * (g / (1.0f + wg_exp(-g))));
    }
}
