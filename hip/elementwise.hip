// Elementwise ops over n elements, any float dtype for each operand:
//   add:    y = a + b                  swiglu: y = silu(a) * b = a / (1 + exp(-a)) * b
//   swiglu_pairs: y[i] = silu(x[2i]) * x[2i+1] (one input of interleaved gate/up pairs)
// Grid-stride loops: grid.x blocks, `stride` = grid.x * WG_BLOCK.
#include "wgllm_hip.h"
#ifndef T_A
#define T_A float
#endif
#ifndef T_B
#define T_B float
#endif
#ifndef T_Y
#define T_Y float
#endif

WG_KERNEL void add(const T_A* a, const T_B* b, T_Y* y, u64 n, u64 stride) {
    for (u64 i = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); i < n; i += stride) st(y, i, ld(a, i) + ld(b, i));
}

WG_KERNEL void swiglu(const T_A* a, const T_B* b, T_Y* y, u64 n, u64 stride) {
    for (u64 i = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); i < n; i += stride) {
        float g = ld(a, i);
        st(y, i, g / (1.0f + wg_exp(-g)) * ld(b, i));
    }
}

// swiglu over interleaved (gate, up) pairs, as the fused gate/up projection writes them:
//   y[i] = silu(x[2i]) * x[2i+1]
WG_KERNEL void swiglu_pairs(const T_A* x, T_Y* y, u64 n, u64 stride) {
    for (u64 i = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); i < n; i += stride) {
        float g = ld(x, 2 * i);
        st(y, i, g / (1.0f + wg_exp(-g)) * ld(x, 2 * i + 1));
    }
}
