// min_p: logits [R, V] f32, margin [R, 1] f32 -> out [R, V] f32 (Op::MinP). With m the row's
// largest non-NaN logit, l is kept when l >= m - margin, else it becomes -inf (NaN too, and every
// element of a row of NaN); a margin of +inf copies the row. Bit for bit with backend/cpu/min_p.rs:
// the maximum is found on integer keys (wg_okey, exact in any order), then one f32 subtraction and
// IEEE comparisons (no fast-math here, so NaN and inf compare as on the host).
// One block per row: a strided scan for the largest key, then a strided pass that writes the row.
// grid.x = R.
#include "wgllm_hip.h"

WG_KERNEL void min_p(const float* logits, const float* margin, float* out, u32 v) {
    u32 row = wg_bid_x();
    u64 base = (u64)row * v;
    float mg = margin[row];
    // uniform over the block: every thread takes the same branch, so the barriers inside
    // wg_block_first are reached by all or none
    if (wg_f_bits(mg) == 0x7f800000u) {
        for (u32 j = wg_tid(); j < v; j += WG_BLOCK) out[base + j] = logits[base + j];
        return;
    }
    u32 bk = 0u, bi = 0u;
    for (u32 j = wg_tid(); j < v; j += WG_BLOCK) {
        u32 k = wg_okey(logits[base + j]);
        if (k > bk) bk = k;
    }
    wg_block_first(&bk, &bi);
    // key 1 is NaN (0 "nothing"): a row without a number keeps nothing, as a NaN threshold does
    float thr = wg_bits_f(0x7fc00000u);
    if (bk > 1u) {
        float top = wg_bits_f(bk >= 0x80000000u ? (bk & 0x7fffffffu) : ~bk);
        thr = top - mg;
    }
    for (u32 j = wg_tid(); j < v; j += WG_BLOCK) {
        float l = logits[base + j];
        out[base + j] = l >= thr ? l : wg_bits_f(0xff800000u);
    }
}
