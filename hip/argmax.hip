// argmax: x [R, C] -> idx [R] (u32), the index of each row's maximum, the lowest index on ties;
// NaN never beats a number (a row of all NaN gives 0); -0 and +0 are equal. Comparisons run on
// integer keys (wg_okey), as in shaders/argmax.wgsl, so this matches backend/cpu/reduce.rs.
// One block per row. grid.x = R.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#define AM_U 8u

WG_KERNEL void argmax(const T_X* x, u32* idx, u32 c) {
    u32 row = wg_bid_x();
    u64 base = (u64)row * c;
    u32 bk = 0u, bi = 0xffffffffu;
    // AM_U loads in flight a thread before any comparison (a vocabulary row is ~600 elements a
    // thread: one load at a time left the kernel waiting on memory latency); they are then taken in
    // ascending j, so a tie keeps the earlier index
    for (u32 j0 = wg_tid(); j0 < c; j0 += WG_BLOCK * AM_U) {
        float v[AM_U];
        for (u32 u = 0; u < AM_U; u++) {
            u32 j = j0 + u * WG_BLOCK;
            v[u] = j < c ? ld(x, base + j) : 0.0f;
        }
        for (u32 u = 0; u < AM_U; u++) {
            u32 j = j0 + u * WG_BLOCK;
            u32 k = wg_okey(v[u]);
            if (j < c && k > bk) {
                bk = k;
                bi = j;
            }
        }
    }
    wg_block_first(&bk, &bi);
    if (wg_tid() == 0u) idx[row] = bi;
}
