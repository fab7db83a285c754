// gdn: the gated delta rule (Qwen3.5 Gated DeltaNet) token by token, the recurrent form.
//   gdn_recurrent  qkv [T, 2*nk*dk + nv*dv], b [T, nv], a [T, nv], a_log [nv], dt_bias [nv],
//                  state [nv, dk, dv] (f32) -> o [T, nv, dv], state_out [nv, dk, dv] (f32)
//   gdn_batch      the same over a packed batch: seqs [S, 4] (first row, count, slot, fresh) and
//                  rec_pool [N, nv, dk, dv] (f32, in place) instead of state / state_out
// Per token t and value head h (key head h / (nv / nk)): q, k = l2norm (x / sqrt(sum x^2 + 1e-6)),
// q /= sqrt(dk); beta = sigmoid(b); g = -exp(a_log) softplus(a + dt_bias);
// S *= exp(g); delta = (v - kᵀS) beta; S += k deltaᵀ; o = qᵀS (after the update).
//
// The value columns of S evolve independently, so one block per (value head, tile of GR_TJ
// columns) [x sequence]. Column j of the tile belongs to GR_L consecutive threads (inside one
// wave); lane l keeps rows l + GR_L r of the column in registers. Every reduction (the two norms,
// kᵀS, qᵀS) is over a column's lanes by xor shuffles, so a token costs no block barrier: decode
// and gdn_batch's prefill (every token recurrent) are latency bound on exactly this loop. A
// butterfly gives every lane the same bits, so the lanes of a column never disagree on delta.
// Both entries run gdn_tile: a sequence's bits are the same through either.
// grid: gdn_recurrent (nv * ntiles, 1); gdn_batch (nv * ntiles, S).
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

// Largest key head dim (src/backend/native/plan/gdn.rs refuses more): GR_R registers per lane.
#define GDN_DK_MAX 128
#define GR_TJ 32
#define GR_L (WG_BLOCK / GR_TJ)
#define GR_R (GDN_DK_MAX / GR_L)
#define GDN_L2_EPS 1e-6f

// torch.nn.functional.softplus (threshold 20); below -15, 1 + exp(x) rounds to 1 in f32 and the
// log would say 0: exp(x) is the value to f32 precision there.
WG_DEV float gdn_softplus(float x) {
    if (x > 20.0f) return x;
    if (x < -15.0f) return wg_exp(x);
    return wg_log(1.0f + wg_exp(x));
}
WG_DEV float gdn_sigmoid(float x) { return 1.0f / (1.0f + wg_exp(-x)); }

// Sum over the GR_L lanes of a column (consecutive threads of one wave).
WG_DEV float gdn_col_sum(float v) {
    for (u32 m = GR_L / 2u; m > 0u; m >>= 1) v += wg_bits_f(wg_shfl_xor(wg_f_bits(v), m));
    return v;
}

// Tokens r0 .. r0 + nt of value head h, column tile jt; the state S_h at element sbase of `s_in`
// (read unless fresh: zero then) and of `s_out` (gdn_batch passes the pool as both).
WG_DEV void gdn_tile(const T_X* qkv, const T_B* b, const T_A* a, const T_W* a_log, const T_WB* dt_bias,
                     const float* s_in, T_O* o, float* s_out, u32 h, u32 jt, u32 r0, u32 nt, u64 sbase, bool fresh,
                     u32 nk, u32 nv, u32 dk, u32 dv) {
    u32 tid = wg_tid();
    u32 lane = tid % GR_L, jj = jt * GR_TJ + tid / GR_L;
    bool col = jj < dv;
    u32 kh = h / (nv / nk);
    u64 c = 2ull * nk * dk + (u64)nv * dv;
    u64 qo = (u64)kh * dk, ko = (u64)(nk + kh) * dk, vo = 2ull * nk * dk + (u64)h * dv;
    float s[GR_R];
    for (u32 r = 0; r < GR_R; r++) {
        u32 i = lane + GR_L * r;
        s[r] = (col && i < dk && !fresh) ? s_in[sbase + (u64)i * dv + jj] : 0.0f;
    }
    float qscale = 1.0f / wg_sqrt((float)dk);
    float ag = -wg_exp(ld(a_log, h)), dtb = ld(dt_bias, h);
    for (u32 t = r0; t < r0 + nt; t++) {
        u64 row = (u64)t * c;
        float qv[GR_R], kv[GR_R];
        float ssq = 0.0f, ssk = 0.0f;
        for (u32 r = 0; r < GR_R; r++) {
            u32 i = lane + GR_L * r;
            qv[r] = i < dk ? ld(qkv, row + qo + i) : 0.0f;
            kv[r] = i < dk ? ld(qkv, row + ko + i) : 0.0f;
            ssq += qv[r] * qv[r];
            ssk += kv[r] * kv[r];
        }
        float rq = qscale / wg_sqrt(gdn_col_sum(ssq) + GDN_L2_EPS);
        float rk = 1.0f / wg_sqrt(gdn_col_sum(ssk) + GDN_L2_EPS);
        float beta = gdn_sigmoid(ld(b, (u64)t * nv + h));
        float decay = wg_exp(ag * gdn_softplus(ld(a, (u64)t * nv + h) + dtb));
        float v = col ? ld(qkv, row + vo + jj) : 0.0f;
        // rows past dk hold zeros in s, qv and kv: they add nothing
        float ks = 0.0f;
        for (u32 r = 0; r < GR_R; r++) {
            s[r] *= decay;
            ks += s[r] * kv[r];
        }
        float delta = (v - gdn_col_sum(ks) * rk) * beta;
        float os = 0.0f;
        for (u32 r = 0; r < GR_R; r++) {
            s[r] += kv[r] * rk * delta;
            os += s[r] * qv[r];
        }
        os = gdn_col_sum(os) * rq;
        if (lane == 0u && col) st(o, ((u64)t * nv + h) * dv + jj, os);
    }
    for (u32 r = 0; r < GR_R; r++) {
        u32 i = lane + GR_L * r;
        if (col && i < dk) s_out[sbase + (u64)i * dv + jj] = s[r];
    }
}

WG_KERNEL void gdn_recurrent(const T_X* qkv, const T_B* b, const T_A* a, const T_W* a_log, const T_WB* dt_bias,
                             const float* state, T_O* o, float* state_out, u32 t, u32 nk, u32 nv, u32 dk, u32 dv,
                             u32 ntiles) {
    u32 h = wg_bid_x() / ntiles, jt = wg_bid_x() % ntiles;
    gdn_tile(qkv, b, a, a_log, dt_bias, state, o, state_out, h, jt, 0u, t, (u64)h * dk * dv, false, nk, nv, dk, dv);
}

// A sequence whose rows pass T or whose slot passes the pool is skipped (the engine checks
// descriptors before upload: op::check_state_batch); the test is uniform over the block.
WG_KERNEL void gdn_batch(const T_X* qkv, const T_B* b, const T_A* a, const T_W* a_log, const T_WB* dt_bias,
                         const u32* seqs, T_O* o, float* pool, u32 t, u32 nslots, u32 nk, u32 nv, u32 dk, u32 dv,
                         u32 ntiles) {
    u32 h = wg_bid_x() / ntiles, jt = wg_bid_x() % ntiles, sq = wg_bid_y();
    u32 row = seqs[4u * sq], cnt = seqs[4u * sq + 1u], slot = seqs[4u * sq + 2u];
    bool fresh = seqs[4u * sq + 3u] != 0u;
    if (row > t || cnt > t - row || slot >= nslots) return;
    u64 sbase = ((u64)slot * nv + h) * dk * dv;
    gdn_tile(qkv, b, a, a_log, dt_bias, pool, o, pool, h, jt, row, cnt, sbase, fresh, nk, nv, dk, dv);
}
