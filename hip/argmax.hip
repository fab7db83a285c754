// argmax: x [R, C] -> idx [R] (u32), the index of each row's maximum, the lowest index on ties;
// NaN never beats a number (a row of all NaN gives 0); -0 and +0 are equal. Comparisons run on
// integer keys (wg_okey), as in shaders/argmax.wgsl, so this matches backend/cpu/reduce.rs.
// One block per row. grid.x = R.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif

WG_KERNEL void argmax(const T_X* x, u32* idx, u32 c) {
    u32 row = wg_bid_x();
    u64 base = (u64)row * c;
    u32 bk = 0u, bi = 0xffffffffu;
    for (u32 j = wg_tid(); j < c; j += WG_BLOCK) {
        u32 k = wg_okey(ld(x, base + j));
        // j only grows, so a tie keeps the earlier index
        if (k > bk) {
            bk = k;
            bi = j;
        }
    }
    wg_block_first(&bk, &bi);
    if (wg_tid() == 0u) idx[row] = bi;
}
