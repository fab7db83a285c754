// softmax over each row of x [R, C] -> y [R, C]; f32 math: max, sum of exp(x - max), scale.
// One block per row. grid.x = R.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_Y
#define T_Y float
#endif

WG_KERNEL void softmax(const T_X* x, T_Y* y, u32 c) {
    u64 base = (u64)wg_bid_x() * c;
    u32 tid = wg_tid();
    float mx = wg_bits_f(0xff800000u);
    for (u32 j = tid; j < c; j += WG_BLOCK) {
        float v = ld(x, base + j);
        mx = v > mx ? v : mx;
    }
    mx = wg_block_max(mx);
    float z = 0.0f;
    for (u32 j = tid; j < c; j += WG_BLOCK) z += wg_exp(ld(x, base + j) - mx);
    z = wg_block_sum(z);
    float inv = 1.0f / z;
    for (u32 j = tid; j < c; j += WG_BLOCK) st(y, base + j, wg_exp(ld(x, base + j) - mx) * inv);
}
