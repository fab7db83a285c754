// kv_write (vLLM's reshape_and_cache): k, v [T, Hkv, Dh] -> pool rows slots[t] of k_pool, v_pool
// [NB, BS, Hkv, Dh] (in-out). Each element is rounded to the pool's dtype by `st` (nearest even,
// as Cast); every other pool row is untouched (a 16-bit store writes its own two bytes only).
// A slot past the pool (`rows` = NB * BS; the host checks slots, op::check_slots) is skipped,
// never written. Grid-stride over the n = T * row elements of k (row = Hkv * Dh).
#include "wgllm_hip.h"
#ifndef T_K
#define T_K float
#endif
#ifndef T_V
#define T_V float
#endif
#ifndef T_KV
#define T_KV float
#endif

WG_KERNEL void kv_write(const T_K* k, const T_V* v, const u32* slots, T_KV* kp, T_KV* vp, u64 n, u64 stride, u32 row,
                        u32 rows) {
    for (u64 e = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); e < n; e += stride) {
        u32 slot = slots[e / row];
        if (slot < rows) {
            u64 dst = (u64)slot * row + e % row;
            st(kp, dst, ld(k, e));
            st(vp, dst, ld(v, e));
        }
    }
}
