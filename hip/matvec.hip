// matvec: y[M, N] = x[M, K] · W[N, K]ᵀ for small M (decode, M <= MV_MAX_M), f32 accumulation.
// `split` waves (1, 2, 4 or 8; the plan's choice) share each output column n (a block holds
// WG_BLOCK / wave / split columns):
// their lanes stride over K together, each keeping M partial sums; a wave reduction, then the
// waves' partials summed in a fixed order. Splitting a column over several waves keeps enough
// loads in flight when N is small (a decode step's k, v, o and down projections): with one wave
// per column a 1024-row matrix gave 128 blocks, one per SM, and the kernel waited on memory
// latency rather than bandwidth. A matrix with many rows (the LM head) has blocks enough with one
// wave a column, and is faster so. W is read once for all M rows.
// When every W row starts 16-byte aligned (aligned base, K * sizeof(T_W) a multiple of 16: the
// real models' case), each lane reads W 16 bytes at a time (4 f32 or 8 f16/bf16); otherwise one
// element at a time (odd K, offset views).
// grid.x = ceil(N / (WG_BLOCK / wave / split)).
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

WG_KERNEL void matvec(const T_X* x, const T_W* w, T_Y* y, u32 m, u32 n, u32 k, u32 split) {
    __shared__ float part[WG_BLOCK / 32][MV_MAX_M];
    u32 wave = wg_wave();
    u32 tid = wg_tid();
    u32 wid = tid / wave, lane = tid % wave;
    u32 cols = WG_BLOCK / wave / split;
    u32 col = wg_bid_x() * cols + wid / split;
    // the column's split waves act as one group of g lanes
    u32 g = wave * split, gl = (wid % split) * wave + lane;
    float acc[MV_MAX_M];
    for (u32 r = 0; r < MV_MAX_M; r++) acc[r] = 0.0f;
    // every thread reaches the barrier below: a column past N only skips the loads
    if (col < n) {
        u64 wb = (u64)col * k;
        const u32 per = 16u / (u32)sizeof(T_W);
        bool vec = ((u64)w & 15u) == 0u && ((u64)k * sizeof(T_W)) % 16u == 0u;
        if (vec) {
#pragma unroll 4
            for (u32 j0 = gl * per; j0 < k; j0 += g * per) {
                float wv[8];
                ld16(w, wb + j0, wv);
                for (u32 e = 0; e < per; e++)
                    for (u32 r = 0; r < MV_MAX_M; r++)
                        if (r < m) acc[r] += ld(x, (u64)r * k + j0 + e) * wv[e];
            }
        } else {
            for (u32 j = gl; j < k; j += g) {
                float wv = ld(w, wb + j);
                for (u32 r = 0; r < MV_MAX_M; r++)
                    if (r < m) acc[r] += ld(x, (u64)r * k + j) * wv;
            }
        }
    }
    // only the m rows there are (m is the same for the whole block, so every lane shuffles)
    for (u32 r = 0; r < MV_MAX_M; r++) {
        if (r < m) {
            float s = wg_wave_sum(acc[r]);
            if (lane == 0u) part[wid][r] = s;
        }
    }
    wg_sync();
    if (col < n && wid % split == 0u && lane < MV_MAX_M && lane < m) {
        float s = 0.0f;
        for (u32 i = 0; i < split; i++) s += part[wid + i][lane];
        st(y, (u64)lane * n + col, s);
    }
}
