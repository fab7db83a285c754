// matvec: y[M, N] = x[M, K] · W[N, K]ᵀ for small M (decode, M <= MV_MAX_M), f32 accumulation.
// One wave per output column n (a block holds WG_BLOCK / wave columns); its lanes stride over K
// together, each keeping M partial sums, then a wave reduction. W is read once for all M rows.
// When every W row starts 16-byte aligned (aligned base, K * sizeof(T_W) a multiple of 16: the
// real models' case), each lane reads W 16 bytes at a time (4 f32 or 8 f16/bf16); otherwise one
// element at a time (odd K, offset views).
// grid.x = ceil(N / (WG_BLOCK / wave)).
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
#define MV_MAX_M 4

WG_KERNEL void matvec(const T_X* x, const T_W* w, T_Y* y, u32 m, u32 n, u32 k) {
    u32 wave = wg_wave();
    u32 lane = wg_tid() % wave;
    u32 col = wg_bid_x() * (WG_BLOCK / wave) + wg_tid() / wave;
    // a whole wave shares `col`, so it leaves together (no shuffle loses a lane)
    if (col >= n) return;
    float acc[MV_MAX_M];
    for (u32 r = 0; r < MV_MAX_M; r++) acc[r] = 0.0f;
    u64 wb = (u64)col * k;
    const u32 per = 16u / (u32)sizeof(T_W);
    bool vec = ((u64)w & 15u) == 0u && ((u64)k * sizeof(T_W)) % 16u == 0u;
    if (vec) {
        for (u32 j0 = lane * per; j0 < k; j0 += wave * per) {
            float wv[8];
            ld16(w, wb + j0, wv);
            for (u32 e = 0; e < per; e++)
                for (u32 r = 0; r < MV_MAX_M; r++)
                    if (r < m) acc[r] += ld(x, (u64)r * k + j0 + e) * wv[e];
        }
    } else {
        for (u32 j = lane; j < k; j += wave) {
            float wv = ld(w, wb + j);
            for (u32 r = 0; r < MV_MAX_M; r++)
                if (r < m) acc[r] += ld(x, (u64)r * k + j) * wv;
        }
    }
    for (u32 r = 0; r < MV_MAX_M; r++) {
        float s = wg_wave_sum(acc[r]);
        if (lane == 0u && r < m) st(y, (u64)r * n + col, s);
    }
}
