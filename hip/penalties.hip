// penalties: logits [R, V] f32, counts [R, V] u32 (output count | PROMPT_SEEN, bit 31),
// params [R, 4] f32 = (rep, rep_inv, presence, frequency) -> out [R, V] f32 (Op::Penalties).
// Bit for bit with backend/cpu/penalties.rs: each step is one f32 operation rounded on its own, the
// products through wg_mul_rn so no compiler fuses them into the subtractions that follow. An
// unseen token or a non-finite logit is copied by its bits.
// Grid-stride over the R * V elements: grid.x blocks, `stride` = grid.x * WG_BLOCK.
#include "wgllm_hip.h"

WG_KERNEL void penalties(const float* logits, const u32* counts, const float* params, float* out, u64 n,
                         u64 stride, u32 v) {
    for (u64 i = (u64)wg_bid_x() * WG_BLOCK + wg_tid(); i < n; i += stride) {
        u32 c = counts[i];
        float l = logits[i];
        if (c == 0u || (wg_f_bits(l) & 0x7f800000u) == 0x7f800000u) {
            out[i] = l;
            continue;
        }
        // every operand is below 2^32 elements (the plan refuses larger): a 32-bit division
        const float* p = params + 4u * ((u32)i / v);
        float x = wg_mul_rn(l, l > 0.0f ? p[1] : p[0]);
        u32 times = c & 0x7fffffffu;
        if (times > 0u) {
            x = x - wg_mul_rn(p[3], (float)times);
            x = x - p[2];
        }
        out[i] = x;
    }
}
