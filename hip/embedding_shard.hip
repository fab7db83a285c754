// embedding_shard: one shard of an embedding table too large for one binding. table [Vs, D]
// holds vocabulary rows first..first+Vs; ids [T] (u32) -> out [T, D] (in-out):
// out[t] = table[ids[t] - first] where first <= ids[t] < first + Vs; every other row is left as it
// is (another shard writes it). One element per thread, each stored on its own (a 16-bit store
// never touches its neighbour), so rows of other shards keep their bits.
// grid.x = T, grid.y = ceil(D / WG_BLOCK).
#include "wgllm_hip.h"
#ifndef T_TABLE
#define T_TABLE float
#endif
#ifndef T_OUT
#define T_OUT float
#endif

WG_KERNEL void embedding_shard(const T_TABLE* table, const u32* ids, T_OUT* out, u32 vs, u32 d, u32 first) {
    u32 t = wg_bid_x();
    u32 j = wg_bid_y() * WG_BLOCK + wg_tid();
    // an id below `first` wraps to a huge row and is skipped with the ones past the shard
    u32 r = ids[t] - first;
    if (j >= d || r >= vs) return;
    st(out, (u64)t * d + j, ld(table, (u64)r * d + j));
}
