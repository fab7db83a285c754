// embedding: table [V, D] (float), ids [T] (u32) -> out [T, D]; an id >= V gives a row of zeros.
// grid.x = T (one row per block row), grid.y = ceil(D / WG_BLOCK).
#include "wgllm_hip.h"
#ifndef T_TABLE
#define T_TABLE float
#endif
#ifndef T_OUT
#define T_OUT float
#endif

WG_KERNEL void embedding(const T_TABLE* table, const u32* ids, T_OUT* out, u32 v, u32 d) {
    u32 t = wg_bid_x();
    u32 j = wg_bid_y() * WG_BLOCK + wg_tid();
    if (j >= d) return;
    u32 id = ids[t];
    u64 o = (u64)t * d + j;
    st(out, o, id < v ? ld(table, (u64)id * d + j) : 0.0f);
}
