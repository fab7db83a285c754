// causal_conv1d_batch: causal_conv1d.hip's conv + SiLU over a packed batch of sequences, each with
// its conv state (its previous K-1 inputs, oldest first) in a slot of a pool [N, K-1, C] (f32).
// seqs [S, 4] per sequence: first row, token count, state slot, fresh (1: the state is zero and
// the slot is not read). Two launches, in this order (the second overwrites what the first reads):
//   causal_conv1d_batch        one item per (row, channel): y = silu(sum_j w[c, j] * xp[i + j, c])
//                              with xp = cat(slot state, the sequence's rows), reading the pool
//   causal_conv1d_batch_state  one item per (sequence, channel): the last K-1 rows of xp back into
//                              the slot, in place (see there why ascending order is safe)
// A row's sum takes the same values in the same order whether its window lies in this chunk or
// reaches into the state (the pool holds past inputs exactly), so its bits do not depend on the
// batch or the chunking. A sequence whose rows or slot are out of range is skipped, so a bad
// descriptor never reads or writes outside the operands. Grid-stride loops; math in f32.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_W
#define T_W float
#endif
#ifndef T_Y
#define T_Y float
#endif

// A sequence of the descriptor; count 0 when its rows or slot are out of range.
struct cc_seq {
    u32 row, count, slot, fresh;
};

WG_DEV cc_seq cc_seq_of(const u32* seqs, u32 sq, u32 t, u32 slots) {
    cc_seq d;
    d.row = seqs[4u * sq];
    d.count = seqs[4u * sq + 1u];
    d.slot = seqs[4u * sq + 2u];
    d.fresh = seqs[4u * sq + 3u];
    if (d.row > t || d.count > t - d.row || d.slot >= slots) d.count = 0u;
    return d;
}

// Row r of sequence d's xp = cat(state, its rows), channel ch.
WG_DEV float cc_xp(const T_X* x, const float* pool, cc_seq d, u32 r, u32 ch, u32 c, u32 km1) {
    if (r < km1) return d.fresh != 0u ? 0.0f : pool[((u64)d.slot * km1 + r) * c + ch];
    return ld(x, (u64)(d.row + r - km1) * c + ch);
}

// n = T * C items.
WG_KERNEL void causal_conv1d_batch(const T_X* x, const T_W* w, const u32* seqs, T_Y* y, float* pool, u32 t, u32 c,
                                   u32 k, u32 s, u32 slots, u64 n, u64 stride) {
    for (u64 g = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); g < n; g += stride) {
        u32 r = (u32)(g / c), ch = (u32)(g % c);
        // the sequence holding row r: the last whose first row is <= r (rows are packed in order)
        u32 lo = 0u, hi = s;
        while (hi - lo > 1u) {
            u32 mid = (lo + hi) / 2u;
            if (seqs[4u * mid] <= r) lo = mid;
            else hi = mid;
        }
        cc_seq d = cc_seq_of(seqs, lo, t, slots);
        if (r < d.row || r >= d.row + d.count) continue;
        u32 i = r - d.row;
        float sum = 0.0f;
        for (u32 j = 0; j < k; j++) sum += ld(w, (u64)ch * k + j) * cc_xp(x, pool, d, i + j, ch, c, k - 1u);
        st(y, g, sum / (1.0f + wg_exp(-sum)));
    }
}

// n = S * C items. State row r of the slot becomes xp[count + r]. In place and in ascending r:
// row r reads pool row count + r > r (when that is still in the state), which no earlier step
// has written, so no copy of the old state is needed.
WG_KERNEL void causal_conv1d_batch_state(const T_X* x, const T_W*, const u32* seqs, T_Y*, float* pool, u32 t, u32 c,
                                         u32 k, u32, u32 slots, u64 n, u64 stride) {
    for (u64 g = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); g < n; g += stride) {
        cc_seq d = cc_seq_of(seqs, (u32)(g / c), t, slots);
        u32 ch = (u32)(g % c), km1 = k - 1u;
        if (d.count == 0u) continue;
        for (u32 r = 0; r < km1; r++) pool[((u64)d.slot * km1 + r) * c + ch] = cc_xp(x, pool, d, d.count + r, ch, c, km1);
    }
}
