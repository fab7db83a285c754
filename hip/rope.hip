// rope: NeoX rotate-half on the first R = 2 * half dims of each head; the rest pass through.
// x [T, H, Dh], pos [T] (u32), cos/sin [P, half] (f32, from op::rope_tables) -> y [T, H, Dh]:
//   y[i] = x[i] cos - x[i + half] sin, y[i + half] = x[i + half] cos + x[i] sin, i < half.
// A position past the table writes NaN (the reference refuses it; a device cannot).
// One block per (t, h) head row. grid.x = T * H.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_Y
#define T_Y float
#endif

WG_KERNEL void rope(const T_X* x, const u32* pos, const float* cos_t, const float* sin_t, T_Y* y, u32 h, u32 dh,
                    u32 half, u32 max_pos) {
    u32 row = wg_bid_x();
    u32 t = row / h;
    u64 base = (u64)row * dh;
    u32 tid = wg_tid();
    u32 p = pos[t];
    bool ok = p < max_pos;
    for (u32 i = tid; i < half; i += WG_BLOCK) {
        float a = ld(x, base + i);
        float b = ld(x, base + i + half);
        float c = ok ? cos_t[(u64)p * half + i] : wg_bits_f(0x7fc00000u);
        float s = ok ? sin_t[(u64)p * half + i] : wg_bits_f(0x7fc00000u);
        st(y, base + i, a * c - b * s);
        st(y, base + i + half, b * c + a * s);
    }
    for (u32 j = 2u * half + tid; j < dh; j += WG_BLOCK) st(y, base + j, ld(x, base + j));
}
