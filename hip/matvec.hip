// matvec: y[M, N] = x[M, K] · W[N, K]ᵀ for small M (decode, M <= MV_MAX_M), f32 accumulation.
// `split` waves (1 or 2, or 4; the plan's choice) share each output column (a block holds
// WG_BLOCK / wave / split columns). Their lanes stride over K together; each lane loads up to MV_U
// chunks of the weight row (and the x chunks they meet) before it sums any of them, so a lane waits
// on one round trip a trip of MV_U chunks, not one a chunk. Then a wave reduction, and the split
// waves' partials summed in a fixed order. A column's order of sums (its chunks in K order within a
// lane, the lanes' butterfly, the waves in order) depends on split and the wave size, never on M.
// Splitting a column over waves keeps loads in flight when N is small; a matrix with many rows has
// blocks enough with one wave a column. W is read once for all M rows.
// When every W row starts 16-byte aligned (aligned base, K * sizeof(T_W) a multiple of 16: the
// real models' case), each lane reads W 16 bytes at a time (4 f32 or 8 f16/bf16), and x 16 bytes
// at a time too where its base is aligned; otherwise one element at a time.
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
#define MV_U 4

// `per` (4 or 8) consecutive x values from element i: 16 bytes at a time when x's base is 16-byte
// aligned and `per` values are whole 16-byte pieces (then every chunk's are: K is a multiple of
// per), else one at a time
template <class T> WG_DEV void mv_ldx(const T* p, u64 i, float* o, u32 per, bool vec) {
    const u32 each = 16u / (u32)sizeof(T);
    if (vec && per % each == 0u) {
        for (u32 c = 0; c < per; c += each) ld16(p, i + c, o + c);
    } else {
        for (u32 e = 0; e < per; e++) o[e] = ld(p, i + e);
    }
}

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
            bool xvec = ((u64)x & 15u) == 0u;
            u32 step = g * per;
            for (u32 j0 = gl * per; j0 < k; j0 += MV_U * step) {
                float wv[MV_U][8];
                for (u32 u = 0; u < MV_U; u++)
                    if (j0 + u * step < k) ld16(w, wb + j0 + u * step, wv[u]);
                for (u32 u = 0; u < MV_U; u++) {
                    if (j0 + u * step >= k) break;
                    for (u32 r = 0; r < MV_MAX_M; r++) {
                        if (r >= m) break;
                        float xv[8];
                        mv_ldx(x, (u64)r * k + j0 + u * step, xv, per, xvec);
                        for (u32 e = 0; e < per; e++) acc[r] += xv[e] * wv[u][e];
                    }
                }
            }
        } else {
            for (u32 j = gl; j < k; j += g) {
                float wv = ld(w, wb + j);
                for (u32 r = 0; r < MV_MAX_M; r++) {
                    if (r >= m) break;
                    acc[r] += ld(x, (u64)r * k + j) * wv;
                }
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
