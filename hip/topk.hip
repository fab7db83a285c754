// topk: x [R, C] -> values [R, k] (x's dtype, the raw elements), idx [R, k] (u32): the k largest
// of each row, descending, ties to the lower index. k selection rounds per row: round r takes the
// first (key, index) pair in (key desc, index asc) order that comes after round r-1's winner.
// Keys are wg_okey's (NaN below every number, -0 == +0). One block per row. grid.x = R.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif

WG_KERNEL void topk(const T_X* x, T_X* vals, u32* idx, u32 c, u32 k) {
    u32 row = wg_bid_x();
    u64 base = (u64)row * c;
    // the previous winner; (0xffffffff, 0) comes before every real key
    u32 pk = 0xffffffffu, pi = 0u;
    for (u32 r = 0; r < k; r++) {
        u32 bk = 0u, bi = 0xffffffffu;
        for (u32 j = wg_tid(); j < c; j += WG_BLOCK) {
            u32 key = wg_okey(ld(x, base + j));
            bool after = key < pk || (key == pk && j > pi);
            if (after && key > bk) {
                bk = key;
                bi = j;
            }
        }
        wg_block_first(&bk, &bi);
        if (wg_tid() == 0u) {
            vals[(u64)row * k + r] = x[base + bi];
            idx[(u64)row * k + r] = bi;
        }
        pk = bk;
        pi = bi;
    }
}
