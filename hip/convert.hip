// copy: raw elements of any dtype (T_E = u16 or u32 by element size), bit-exact.
// cast: float to float, re-encoded in y's dtype (round to nearest even), bit-exact with dtype.rs.
// Grid-stride loops: grid.x blocks, `stride` = grid.x * WG_BLOCK.
#include "wgllm_hip.h"
#ifndef T_E
#define T_E u32
#endif
#ifndef T_X
#define T_X float
#endif
#ifndef T_Y
#define T_Y float
#endif

WG_KERNEL void copy(const T_E* x, T_E* y, u64 n, u64 stride) {
    for (u64 i = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); i < n; i += stride) y[i] = x[i];
}

WG_KERNEL void cast(const T_X* x, T_Y* y, u64 n, u64 stride) {
    for (u64 i = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); i < n; i += stride) st(y, i, ld(x, i));
}
