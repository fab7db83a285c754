// causal_conv1d: depthwise causal conv1d over the sequence, then SiLU (Qwen3.5's linear-attention
// conv); causal_conv1d_update (its one-token decode step) is the same kernel with T = 1.
// x [T, C], w [C, K], state [K-1, C] (the previous K-1 inputs, oldest first) -> y [T, C],
// state_out [K-1, C]. With xp = cat(state, x) ([K-1+T, C]):
//   y[t, c] = silu(sum_j w[c, j] * xp[t + j, c])     (w[c, K-1] weighs the current token)
//   state_out[r, c] = xp[T + r, c]                    (the last K-1 inputs, copied exactly)
// state and state_out are distinct tensors (the caller ping-pongs them), so one launch does both.
// Grid-stride over (T + K-1) * C items: items 0..T*C are outputs, the rest state_out elements.
// Math in f32.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
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
#ifndef T_SO
#define T_SO float
#endif

// Row r of xp = cat(state, x), channel ch.
WG_DEV float cc_xp(const T_X* x, const T_S* state, u32 r, u32 ch, u32 c, u32 km1) {
    return r < km1 ? ld(state, (u64)r * c + ch) : ld(x, (u64)(r - km1) * c + ch);
}

WG_KERNEL void causal_conv1d(const T_X* x, const T_W* w, const T_S* state, T_Y* y, T_SO* state_out, u32 t, u32 c,
                             u32 k, u64 n, u64 stride) {
    u64 ny = (u64)t * c;
    for (u64 g = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); g < n; g += stride) {
        if (g < ny) {
            u32 ti = (u32)(g / c), ch = (u32)(g % c);
            float s = 0.0f;
            for (u32 j = 0; j < k; j++) s += ld(w, (u64)ch * k + j) * cc_xp(x, state, ti + j, ch, c, k - 1u);
            st(y, g, s / (1.0f + wg_exp(-s)));
        } else {
            u64 e = g - ny;
            st(state_out, e, cc_xp(x, state, t + (u32)(e / c), (u32)(e % c), c, k - 1u));
        }
    }
}
