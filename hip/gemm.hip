// gemm: y[M, N] = x[M, K] · W[N, K]ᵀ (prefill), f32 accumulation.
// 64x64 output tiles, staged through shared memory GK = 16 columns of K at a time (converted to
// f32 on load); each of the 256 threads owns a 4x4 block of outputs strided by 16 rows/columns.
// grid.x = ceil(N / 64), grid.y = ceil(M / 64).
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
#define GT 64
#define GK 16

WG_KERNEL void gemm(const T_X* x, const T_W* w, T_Y* y, u32 m, u32 n, u32 k) {
    __shared__ float xs[GK][GT + 1];
    __shared__ float ws[GK][GT + 1];
    u32 tid = wg_tid();
    u32 n0 = wg_bid_x() * GT, m0 = wg_bid_y() * GT;
    u32 tx = tid % 16u, ty = tid / 16u;
    float acc[4][4];
    for (u32 i = 0; i < 4u; i++)
        for (u32 j = 0; j < 4u; j++) acc[i][j] = 0.0f;
    for (u32 k0 = 0; k0 < k; k0 += GK) {
        for (u32 l = tid; l < GT * GK; l += WG_BLOCK) {
            u32 r = l / GK, kk = l % GK;
            u32 gk = k0 + kk;
            xs[kk][r] = (m0 + r < m && gk < k) ? ld(x, (u64)(m0 + r) * k + gk) : 0.0f;
            ws[kk][r] = (n0 + r < n && gk < k) ? ld(w, (u64)(n0 + r) * k + gk) : 0.0f;
        }
        wg_sync();
        for (u32 kk = 0; kk < GK; kk++) {
            float a[4], b[4];
            for (u32 i = 0; i < 4u; i++) a[i] = xs[kk][ty + 16u * i];
            for (u32 j = 0; j < 4u; j++) b[j] = ws[kk][tx + 16u * j];
            for (u32 i = 0; i < 4u; i++)
                for (u32 j = 0; j < 4u; j++) acc[i][j] += a[i] * b[j];
        }
        wg_sync();
    }
    for (u32 i = 0; i < 4u; i++) {
        u32 row = m0 + ty + 16u * i;
        if (row >= m) continue;
        for (u32 j = 0; j < 4u; j++) {
            u32 col = n0 + tx + 16u * j;
            if (col < n) st(y, (u64)row * n + col, acc[i][j]);
        }
    }
}
