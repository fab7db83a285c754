// gdn_chunked: the gated delta rule (contract and operands of gdn_recurrent, hip/gdn.hip) in
// chunks of GC_C = 64 tokens, the prefill form (transformers' torch_chunk_gated_delta_rule, as
// src/backend/cpu/gdn.rs gdn_chunked and shaders/gdn_chunk_*.wgsl). Tokens m of a chunk are
// t0 + m, t0 = 64 * chunk; the last chunk has cnt = T - t0 valid tokens, the rest are padding
// with q = k = v = 0, beta = 0, g = 0 (they leave the state alone). Per chunk, with G the inclusive
// cumsum of g inside the chunk, D[m][n] = exp(G_m - G_n) (n <= m), rk / rq the l2 factors:
//   A[m][n]   = beta_m rk_m rk_n (k_m . k_n) D[m][n]  for n < m   (strictly lower)
//   QKD[m][n] = rq_m rk_n (q_m . k_n) D[m][n]          for n <= m
//   rhs[m][j] = beta_m (v_mj - exp(G_m) rk_m (k_m . S[:, j]))       (S: the state entering)
//   v_new     = (I + A)^-1 rhs                                      (= U - W S)
//   o[m][j]   = exp(G_m) rq_m (q_m . S[:, j]) + sum_{n <= m} QKD[m][n] v_new[n][j]
//   S         = exp(G_last) S + sum_m rk_m k_m exp(G_last - G_m) v_new[m]ᵀ,  G_last = G[63]
//               (padding has g = 0, so G[63] is the cumulative gate of the chunk's last token)
//
// One block per (value head, tile of GC_TJ value columns) carries its state tile S [dk][GC_TJ]
// through the chunks in shared memory; the state-free matrices A and QKD are built per block
// (no scratch buffer between launches: each column tile recomputes them, about as much work as
// its own state products). (I + A)^-1 is formed one column per thread (forward substitution down
// the column, no barrier or shuffle per row), then v_new = Tinv rhs is a plain product. Shared
// memory: 46 KiB at dk = 128 (under the 48 KiB static limit); Tinv and then QKD share a buffer.
// grid.x = nv * ntiles.
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_B
#define T_B float
#endif
#ifndef T_A
#define T_A float
#endif
#ifndef T_W
#define T_W float
#endif
#ifndef T_WB
#define T_WB float
#endif
#ifndef T_O
#define T_O float
#endif

#define GDN_DK_MAX 128
#define GC_C 64
#define GC_TJ 16
// dk slice staged per step, and its padded row stride (odd: the (m, n) dot products read rows n
// of consecutive threads without bank conflicts)
#define GC_DS 32
#define GC_DSP (GC_DS + 1)
#define GC_SH (2 * GC_C * GC_DSP)
#define GC_PP (GC_C * GC_C / WG_BLOCK)
#define GC_PT (GC_C * GC_TJ / WG_BLOCK)
// threads per token for the per-token norms
#define GC_NL (WG_BLOCK / GC_C)
#define GDN_L2_EPS 1e-6f

// torch.nn.functional.softplus (threshold 20); below -15, 1 + exp(x) rounds to 1 in f32.
WG_DEV float gdn_softplus(float x) {
    if (x > 20.0f) return x;
    if (x < -15.0f) return wg_exp(x);
    return wg_log(1.0f + wg_exp(x));
}
WG_DEV float gdn_sigmoid(float x) { return 1.0f / (1.0f + wg_exp(-x)); }

// Sum over `n` consecutive lanes (a power of two dividing the wave); every lane gets the same bits.
WG_DEV float gdn_lanes_sum(float v, u32 n) {
    for (u32 m = n / 2u; m > 0u; m >>= 1) v += wg_bits_f(wg_shfl_xor(wg_f_bits(v), m));
    return v;
}

WG_KERNEL void gdn_chunked(const T_X* qkv, const T_B* b, const T_A* a, const T_W* a_log, const T_WB* dt_bias,
                           const float* state, T_O* o, float* state_out, u32 t, u32 nk, u32 nv, u32 dk, u32 dv,
                           u32 ntiles) {
    __shared__ float s_s[GDN_DK_MAX * GC_TJ];  // the state tile [i][j]
    __shared__ float sh[GC_SH];                // k and q slices [C][DSP] each, then A [C][C]
    __shared__ float qk[GC_C * GC_C];          // Tinv, then QKD
    __shared__ float r_s[GC_C * GC_TJ];        // rhs, then v_new [m][j]
    __shared__ float gv[GC_C], bv[GC_C], rkv[GC_C], rqv[GC_C], eg[GC_C], ew[GC_C];
    u32 tid = wg_tid();
    u32 h = wg_bid_x() / ntiles, jt = wg_bid_x() % ntiles;
    u32 kh = h / (nv / nk);
    u64 c = 2ull * nk * dk + (u64)nv * dv;
    u64 qo = (u64)kh * dk, ko = (u64)(nk + kh) * dk, vo = 2ull * nk * dk + (u64)h * dv;
    u64 sbase = (u64)h * dk * dv;
    // rows past dk are zero: the slice loops below run over whole slices
    for (u32 e = tid; e < GDN_DK_MAX * GC_TJ; e += WG_BLOCK) {
        u32 i = e / GC_TJ, jj = jt * GC_TJ + e % GC_TJ;
        s_s[e] = (i < dk && jj < dv) ? state[sbase + (u64)i * dv + jj] : 0.0f;
    }
    float qscale = 1.0f / wg_sqrt((float)dk);
    float ag = -wg_exp(ld(a_log, h)), dtb = ld(dt_bias, h);
    for (u32 t0 = 0; t0 < t; t0 += GC_C) {
        u32 cnt = t - t0 < GC_C ? t - t0 : GC_C;
        // 1. per-token scalars: GC_NL threads per token sum the squares
        {
            u32 m = tid / GC_NL, p = tid % GC_NL;
            float ssq = 0.0f, ssk = 0.0f;
            if (m < cnt) {
                u64 row = (u64)(t0 + m) * c;
                for (u32 i = p; i < dk; i += GC_NL) {
                    float qv = ld(qkv, row + qo + i), kv = ld(qkv, row + ko + i);
                    ssq += qv * qv;
                    ssk += kv * kv;
                }
            }
            ssq = gdn_lanes_sum(ssq, GC_NL);
            ssk = gdn_lanes_sum(ssk, GC_NL);
            if (p == 0u) {
                float g = 0.0f, beta = 0.0f, rk = 0.0f, rq = 0.0f;
                if (m < cnt) {
                    u64 bi = (u64)(t0 + m) * nv + h;
                    rq = qscale / wg_sqrt(ssq + GDN_L2_EPS);
                    rk = 1.0f / wg_sqrt(ssk + GDN_L2_EPS);
                    beta = gdn_sigmoid(ld(b, bi));
                    g = ag * gdn_softplus(ld(a, bi) + dtb);
                }
                gv[m] = g;
                bv[m] = beta;
                rkv[m] = rk;
                rqv[m] = rq;
            }
        }
        wg_sync();
        if (tid == 0u) {
            float acc = 0.0f;
            for (u32 m = 0; m < GC_C; m++) {
                acc += gv[m];
                gv[m] = acc;
            }
        }
        wg_sync();

        // 2. raw dot products over dk in slices: k_m . k_n and q_m . k_n for the (m, n) pairs
        // n <= m, k_m . S[:, j] and q_m . S[:, j] for the (m, j) pairs
        float acc_k[GC_PP], acc_q[GC_PP], ks[GC_PT], qs[GC_PT];
        for (u32 u = 0; u < GC_PP; u++) acc_k[u] = acc_q[u] = 0.0f;
        for (u32 u = 0; u < GC_PT; u++) ks[u] = qs[u] = 0.0f;
        for (u32 d0 = 0; d0 < dk; d0 += GC_DS) {
            for (u32 e = tid; e < GC_C * GC_DS; e += WG_BLOCK) {
                u32 m = e / GC_DS, d = d0 + e % GC_DS;
                float kv = 0.0f, qv = 0.0f;
                if (m < cnt && d < dk) {
                    u64 row = (u64)(t0 + m) * c;
                    kv = ld(qkv, row + ko + d);
                    qv = ld(qkv, row + qo + d);
                }
                sh[m * GC_DSP + e % GC_DS] = kv;
                sh[GC_C * GC_DSP + m * GC_DSP + e % GC_DS] = qv;
            }
            wg_sync();
            for (u32 u = 0; u < GC_PP; u++) {
                u32 pair = tid + u * WG_BLOCK, m = pair / GC_C, n = pair % GC_C;
                if (n <= m && m < cnt) {
                    float ak = 0.0f, aq = 0.0f;
                    for (u32 d = 0; d < GC_DS; d++) {
                        float kn = sh[n * GC_DSP + d];
                        ak += sh[m * GC_DSP + d] * kn;
                        aq += sh[GC_C * GC_DSP + m * GC_DSP + d] * kn;
                    }
                    acc_k[u] += ak;
                    acc_q[u] += aq;
                }
            }
            for (u32 u = 0; u < GC_PT; u++) {
                u32 e = tid + u * WG_BLOCK, m = e / GC_TJ, j = e % GC_TJ;
                if (m < cnt) {
                    float a1 = 0.0f, a2 = 0.0f;
                    for (u32 d = 0; d < GC_DS; d++) {
                        float sv = s_s[(d0 + d) * GC_TJ + j];
                        a1 += sh[m * GC_DSP + d] * sv;
                        a2 += sh[GC_C * GC_DSP + m * GC_DSP + d] * sv;
                    }
                    ks[u] += a1;
                    qs[u] += a2;
                }
            }
            wg_sync();
        }

        // 3. A over the staging, rhs; the per-token exponentials of the outputs and the state
        for (u32 u = 0; u < GC_PP; u++) {
            u32 pair = tid + u * WG_BLOCK, m = pair / GC_C, n = pair % GC_C;
            float av = 0.0f;
            if (n < m && m < cnt) av = bv[m] * rkv[m] * rkv[n] * acc_k[u] * wg_exp(gv[m] - gv[n]);
            sh[pair] = av;
        }
        for (u32 u = 0; u < GC_PT; u++) {
            u32 e = tid + u * WG_BLOCK, m = e / GC_TJ, jj = jt * GC_TJ + e % GC_TJ;
            float rhs = 0.0f;
            if (m < cnt) {
                float v = jj < dv ? ld(qkv, (u64)(t0 + m) * c + vo + jj) : 0.0f;
                rhs = bv[m] * (v - wg_exp(gv[m]) * rkv[m] * ks[u]);
            }
            r_s[e] = rhs;
            qs[u] *= rqv[m];
        }
        if (tid < GC_C) {
            eg[tid] = wg_exp(gv[tid]);
            ew[tid] = rkv[tid] * wg_exp(gv[GC_C - 1u] - gv[tid]);
        }
        wg_sync();

        // 4. Tinv = (I + A)^-1 (unit lower triangular) into qk, column n by thread n, forward
        // substitution down the column: no barrier or shuffle per row
        if (tid < cnt) {
            u32 n = tid;
            for (u32 m = n; m < cnt; m++) {
                float x = m == n ? 1.0f : 0.0f;
                for (u32 l = n; l < m; l++) x -= sh[m * GC_C + l] * qk[l * GC_C + n];
                qk[m * GC_C + n] = x;
            }
        }
        wg_sync();
        // v_new = Tinv rhs, kept in registers until every thread has read rhs
        float vn[GC_PT];
        for (u32 u = 0; u < GC_PT; u++) {
            u32 e = tid + u * WG_BLOCK, m = e / GC_TJ, j = e % GC_TJ;
            float acc = 0.0f;
            if (m < cnt) {
                for (u32 n = 0; n <= m; n++) acc += qk[m * GC_C + n] * r_s[n * GC_TJ + j];
            }
            vn[u] = acc;
        }
        wg_sync();
        // v_new over rhs, QKD over Tinv
        for (u32 u = 0; u < GC_PT; u++) r_s[tid + u * WG_BLOCK] = vn[u];
        for (u32 u = 0; u < GC_PP; u++) {
            u32 pair = tid + u * WG_BLOCK, m = pair / GC_C, n = pair % GC_C;
            float qkd = 0.0f;
            if (n <= m && m < cnt) qkd = rqv[m] * rkv[n] * acc_q[u] * wg_exp(gv[m] - gv[n]);
            qk[pair] = qkd;
        }
        wg_sync();

        // 5. outputs
        for (u32 u = 0; u < GC_PT; u++) {
            u32 e = tid + u * WG_BLOCK, m = e / GC_TJ, j = e % GC_TJ, jj = jt * GC_TJ + j;
            if (m < cnt && jj < dv) {
                float acc = eg[m] * qs[u];
                for (u32 n = 0; n <= m; n++) acc += qk[m * GC_C + n] * r_s[n * GC_TJ + j];
                st(o, ((u64)(t0 + m) * nv + h) * dv + jj, acc);
            }
        }
        // 6. the state leaving the chunk
        float decay = wg_exp(gv[GC_C - 1u]);
        for (u32 e = tid; e < dk * GC_TJ; e += WG_BLOCK) {
            u32 i = e / GC_TJ, j = e % GC_TJ;
            float acc = 0.0f;
            for (u32 m = 0; m < cnt; m++) acc += ld(qkv, (u64)(t0 + m) * c + ko + i) * ew[m] * r_s[m * GC_TJ + j];
            s_s[e] = decay * s_s[e] + acc;
        }
        wg_sync();
    }
    for (u32 e = tid; e < dk * GC_TJ; e += WG_BLOCK) {
        u32 jj = jt * GC_TJ + e % GC_TJ;
        if (jj < dv) state_out[sbase + (u64)(e / GC_TJ) * dv + jj] = s_s[e];
    }
}
