// add_rms_norm: the fused residual add + RMSNorm.
// a [R, D], b [R, D], w [D] -> sum [R, D] = a + b (stored in sum's dtype),
// y [R, D] = rms_norm(sum as stored, w): sum / sqrt(mean(sum^2) + eps) * w (or * (1 + w) with
// `unit`). Each thread re-reads only the sum elements it stored itself, so sum may alias a or b.
// One block per row. grid.x = R.
// Rows of at most ARN_KEEP * WG_BLOCK elements are held in registers; longer ones are read twice.
#include "wgllm_hip.h"
#define ARN_KEEP 16u
#ifndef T_A
#define T_A float
#endif
#ifndef T_B
#define T_B float
#endif
#ifndef T_W
#define T_W float
#endif
#ifndef T_S
#define T_S float
#endif
#ifndef T_Y
#define T_Y float
#endif

WG_KERNEL void add_rms_norm(const T_A* a, const T_B* b, const T_W* w, T_S* sum, T_Y* y, u32 d, float eps, u32 unit) {
    u64 base = (u64)wg_bid_x() * d;
    u32 tid = wg_tid();
    float ss = 0.0f;
    if (d <= ARN_KEEP * WG_BLOCK) {
        // a row of up to ARN_KEEP elements a thread stays in registers: every load of a, b and w is
        // issued before the first sum, so the kernel waits on one round trip, not one a stride
        float av[ARN_KEEP], bv[ARN_KEEP], sv[ARN_KEEP], wv[ARN_KEEP];
        for (u32 i = 0; i < ARN_KEEP; i++) {
            u32 j = tid + i * WG_BLOCK;
            if (j < d) {
                av[i] = ld(a, base + j);
                bv[i] = ld(b, base + j);
                wv[i] = ld(w, j);
            }
        }
        for (u32 i = 0; i < ARN_KEEP; i++) {
            u32 j = tid + i * WG_BLOCK;
            if (j < d) {
                st(sum, base + j, av[i] + bv[i]);
                sv[i] = ld(sum, base + j);
                ss += sv[i] * sv[i];
            }
        }
        float inv = wg_inv_rms(ss, d, eps);
        for (u32 i = 0; i < ARN_KEEP; i++) {
            u32 j = tid + i * WG_BLOCK;
            if (j < d) st(y, base + j, sv[i] * inv * (unit != 0u ? wv[i] + 1.0f : wv[i]));
        }
        return;
    }
    for (u32 j = tid; j < d; j += WG_BLOCK) {
        st(sum, base + j, ld(a, base + j) + ld(b, base + j));
        float v = ld(sum, base + j);
        ss += v * v;
    }
    float inv = wg_inv_rms(ss, d, eps);
    for (u32 j = tid; j < d; j += WG_BLOCK) {
        float g = ld(w, j);
        if (unit != 0u) g += 1.0f;
        st(y, base + j, ld(sum, base + j) * inv * g);
    }
}
