// quant: the ops over block-quantized weights (GGUF layouts, src/quant/), reading the blocks as
// stored (no dequantized copy on the device):
//   qmatvec_<t>    linear, M <= QMV_MAX_M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ
//   qgemm_<t>      linear, larger M (prefill), 64 x 64 output tiles
//   qembedding_<t> embedding / embedding_shard over a quantized table
// for t in q8_0, q4_0, q4_1, q4_k, q6_k, iq4_nl (one template body each, instantiated per type,
// so one module holds every type and hip/compile.sh checks them all).
// Blocks of 18, 34 and 210 bytes leave rows (and a view's first block) only 2-byte aligned, so
// blocks are read as 16-bit words. Every block field sits at an even offset, and so does every
// group of 8 elements' bytes.
// Dequantization is exact (the embedding is compared bit for bit): each value is the same f32
// operations as src/quant/, with products that feed an add kept out of FMAs (wg_mul_rn).
#include "wgllm_hip.h"
#ifndef T_X
#define T_X float
#endif
#ifndef T_Y
#define T_Y float
#endif
#ifndef T_OUT
#define T_OUT float
#endif
#define QMV_MAX_M 8
#define QGT 64

typedef unsigned char u8;

#define QT_Q8_0 0
#define QT_Q4_0 1
#define QT_Q4_1 2
#define QT_Q4_K 3
#define QT_Q6_K 4
#define QT_IQ4_NL 5
// elements and bytes of a block (src/dtype.rs DType::block); whether values carry an offset
#define QK(t) ((t) == QT_Q4_K || (t) == QT_Q6_K ? 256u : 32u)
#define QBB(t) \
    ((t) == QT_Q8_0 ? 34u : (t) == QT_Q4_1 ? 20u : (t) == QT_Q4_K ? 144u : (t) == QT_Q6_K ? 210u : 18u)
#define QBIAS(t) ((t) == QT_Q4_1 || (t) == QT_Q4_K)

// The 16-bit word at even byte offset o of a block; 4 bytes at even o, little endian.
WG_DEV u32 qh16(const u8* b, u32 o) { return *(const u16*)(b + o); }
WG_DEV u32 qw32(const u8* b, u32 o) { return qh16(b, o) | (qh16(b, o + 2u) << 16); }
WG_DEV float qf16(const u8* b, u32 o) { return wg_f16_to_f32(qh16(b, o)); }
// The low byte of v as a signed value.
WG_DEV float qs8(u32 v) { return (float)((i32)(v << 24) >> 24); }
// IQ4_NL's 16 levels (src/quant/iq4nl.rs KVALUES) as bytes, four to a word: picked in registers,
// no table in memory.
WG_DEV float qkv(u32 n) {
    u32 w = n < 8u ? (n < 4u ? 0xbfad9881u : 0xf6eaddcfu) : (n < 12u ? 0x26190d01u : 0x71594535u);
    return qs8(w >> (8u * (n & 3u)));
}

// Elements e .. e + 8 of the block at `blk` (e a multiple of 8): their codes q[8] and the affine
// map of the 8 (one scale group in every type): value = a * q (+ b where QBIAS).
template <int QT> WG_DEV void qgroup(const u8* blk, u32 e, float* q, float* a, float* b) {
    *b = 0.0f;
    if (QT == QT_Q8_0) {
        // f16 d, i8 qs[32]
        *a = qf16(blk, 0u);
        u32 w0 = qw32(blk, 2u + e), w1 = qw32(blk, 6u + e);
        for (u32 i = 0; i < 4u; i++) {
            q[i] = qs8(w0 >> (8u * i));
            q[4u + i] = qs8(w1 >> (8u * i));
        }
    } else if (QT == QT_Q4_0 || QT == QT_Q4_1 || QT == QT_IQ4_NL) {
        // f16 d, [f16 m,] qs[16]: element i < 16 the low nibble of qs[i], 16 + i the high one
        u32 qs = QT == QT_Q4_1 ? 4u : 2u;
        u32 sh = e >= 16u ? 4u : 0u;
        u32 w0 = qw32(blk, qs + e % 16u) >> sh, w1 = qw32(blk, qs + e % 16u + 4u) >> sh;
        for (u32 i = 0; i < 8u; i++) {
            u32 nib = ((i < 4u ? w0 : w1) >> (8u * (i % 4u))) & 15u;
            q[i] = QT == QT_IQ4_NL ? qkv(nib) : (float)((i32)nib - (QT == QT_Q4_0 ? 8 : 0));
        }
        *a = qf16(blk, 0u);
        if (QT == QT_Q4_1) *b = qf16(blk, 2u);
    } else if (QT == QT_Q4_K) {
        // f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, qs[128]: sub-block j (32 elements) is
        // the low (even j) or high (odd j) nibbles of qs[32 (j / 2) ..][..32]
        u32 j = e / 32u;
        u32 sc, m;
        if (j < 4u) {
            sc = blk[4u + j] & 63u;
            m = blk[8u + j] & 63u;
        } else {
            sc = (blk[8u + j] & 15u) | ((blk[j] >> 2) & 0x30u);
            m = (blk[8u + j] >> 4) | ((blk[4u + j] >> 2) & 0x30u);
        }
        u32 o = 16u + 32u * (j / 2u) + e % 32u, sh = 4u * (j % 2u);
        u32 w0 = qw32(blk, o) >> sh, w1 = qw32(blk, o + 4u) >> sh;
        for (u32 i = 0; i < 4u; i++) {
            q[i] = (float)((w0 >> (8u * i)) & 15u);
            q[4u + i] = (float)((w1 >> (8u * i)) & 15u);
        }
        // (d * sc) * q - dmin * m, as q * a + b with b = -(dmin * m)
        *a = qf16(blk, 0u) * (float)sc;
        *b = -wg_mul_rn(qf16(blk, 2u), (float)m);
    } else {
        // q6_k: ql[128], qh[64], i8 scales[16], f16 d. Element p of half h (128 elements): low
        // 4 bits from nibble p / 64 of ql[64h + p % 64], top 2 from qh[32h + p % 32] >> 2 (p / 32)
        u32 h = e / 128u, p = e % 128u;
        u32 lo = 64u * h + p % 64u, hi = 128u + 32u * h + p % 32u;
        u32 ls = 4u * (p / 64u), hs = 2u * (p / 32u);
        u32 l0 = qw32(blk, lo) >> ls, l1 = qw32(blk, lo + 4u) >> ls;
        u32 h0 = qw32(blk, hi) >> hs, h1 = qw32(blk, hi + 4u) >> hs;
        for (u32 i = 0; i < 8u; i++) {
            u32 s = 8u * (i % 4u);
            u32 l = ((i < 4u ? l0 : l1) >> s) & 15u, t = ((i < 4u ? h0 : h1) >> s) & 3u;
            q[i] = (float)((i32)(l | (t << 4)) - 32);
        }
        *a = qf16(blk, 208u) * qs8(blk[192u + e / 16u]);
    }
}

// The exact values of elements e .. e + 8 of the block at `blk`.
template <int QT> WG_DEV void qdequant8(const u8* blk, u32 e, float* v) {
    float q[8], a, b;
    qgroup<QT>(blk, e, q, &a, &b);
    for (u32 i = 0; i < 8u; i++) v[i] = QBIAS(QT) ? wg_mul_rn(a, q[i]) + b : a * q[i];
}

// One wave per weight row (a block holds WG_BLOCK / wave rows); its lanes stride over the row's
// groups of 8 elements (consecutive lanes on consecutive groups, so the wave reads the blocks and
// the x rows in contiguous runs), each lane reading its group's bytes once for all M rows of x:
// a * sum(x q) (+ b * sum(x)) per group. x is read 16 bytes at a time when its base is 16-byte
// aligned (rows are then too: K is a multiple of 32), else one element at a time.
// grid.x = ceil(N / (WG_BLOCK / wave)).
template <int QT> WG_DEV void qmatvec_body(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) {
    u32 wave = wg_wave();
    u32 lane = wg_tid() % wave;
    u32 row = wg_bid_x() * (WG_BLOCK / wave) + wg_tid() / wave;
    // a whole wave shares `row`, so it leaves together (no shuffle loses a lane)
    if (row >= n) return;
    const u8* wr = w + (u64)row * (k / QK(QT)) * QBB(QT);
    bool xvec = ((u64)x & 15u) == 0u;
    float acc[QMV_MAX_M];
    for (u32 r = 0; r < QMV_MAX_M; r++) acc[r] = 0.0f;
    for (u32 e = lane * 8u; e < k; e += wave * 8u) {
        float q[8], a, b;
        qgroup<QT>(wr + (u64)(e / QK(QT)) * QBB(QT), e % QK(QT), q, &a, &b);
        for (u32 r = 0; r < QMV_MAX_M; r++) {
            if (r >= m) break;
            u64 xo = (u64)r * k + e;
            float xv[8];
            if (xvec) {
                for (u32 c = 0; c < 8u; c += 16u / (u32)sizeof(T_X)) ld16(x, xo + c, xv + c);
            } else {
                for (u32 i = 0; i < 8u; i++) xv[i] = ld(x, xo + i);
            }
            float s = 0.0f, sx = 0.0f;
            for (u32 i = 0; i < 8u; i++) {
                s += xv[i] * q[i];
                sx += xv[i];
            }
            acc[r] += QBIAS(QT) ? a * s + b * sx : a * s;
        }
    }
    for (u32 r = 0; r < QMV_MAX_M; r++) {
        float s = wg_wave_sum(acc[r]);
        if (lane == 0u && r < m) st(y, (u64)r * n + row, s);
    }
}

// 64 x 64 output tiles over K steps of 32 (a unit: whole groups of one block): each thread
// dequantizes one group of 8 of the W tile into shared memory, the x tile is converted to f32 on
// load; each thread then owns a 4 x 4 block of outputs strided by 16 rows / columns.
// grid.x = ceil(N / 64), grid.y = ceil(M / 64).
template <int QT> WG_DEV void qgemm_body(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) {
    __shared__ float xs[32][QGT + 1];
    __shared__ float ws[32][QGT + 1];
    u32 tid = wg_tid();
    u32 n0 = wg_bid_x() * QGT, m0 = wg_bid_y() * QGT;
    u32 tx = tid % 16u, ty = tid / 16u;
    u64 rowb = (u64)(k / QK(QT)) * QBB(QT);
    float acc[4][4];
    for (u32 i = 0; i < 4u; i++)
        for (u32 j = 0; j < 4u; j++) acc[i][j] = 0.0f;
    for (u32 k0 = 0; k0 < k; k0 += 32u) {
        u32 wr = tid / 4u, g = tid % 4u;
        float v[8];
        if (n0 + wr < n) {
            qdequant8<QT>(w + (u64)(n0 + wr) * rowb + (u64)(k0 / QK(QT)) * QBB(QT), k0 % QK(QT) + 8u * g, v);
        } else {
            for (u32 i = 0; i < 8u; i++) v[i] = 0.0f;
        }
        for (u32 i = 0; i < 8u; i++) ws[8u * g + i][wr] = v[i];
        for (u32 l = tid; l < QGT * 32u; l += WG_BLOCK) {
            u32 r = l / 32u, kk = l % 32u;
            xs[kk][r] = m0 + r < m ? ld(x, (u64)(m0 + r) * k + k0 + kk) : 0.0f;
        }
        wg_sync();
        for (u32 kk = 0; kk < 32u; kk++) {
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

// out[t, :] = dequant(table[ids[t] - first]): table rows are vocabulary ids first .. first + V.
// An id outside gives a row of zeros (embedding: first = 0, shard = 0) or leaves the row as it
// is (embedding_shard). Each thread writes one group of 8 (D is whole blocks).
// grid.x = T, grid.y = ceil(D / 8 / WG_BLOCK).
template <int QT>
WG_DEV void qembedding_body(const u8* table, const u32* ids, T_OUT* out, u32 v, u32 d, u32 first, u32 shard) {
    u32 t = wg_bid_x();
    u32 e = (wg_bid_y() * WG_BLOCK + wg_tid()) * 8u;
    if (e >= d) return;
    u32 r = ids[t] - first; // wraps past the table for ids below first
    u64 o = (u64)t * d + e;
    float val[8];
    if (r < v) {
        qdequant8<QT>(table + (u64)r * (d / QK(QT)) * QBB(QT) + (u64)(e / QK(QT)) * QBB(QT), e % QK(QT), val);
    } else {
        if (shard != 0u) return;
        for (u32 i = 0; i < 8u; i++) val[i] = 0.0f;
    }
    for (u32 i = 0; i < 8u; i++) st(out, o + i, val[i]);
}

// clang-format off
WG_KERNEL void qmatvec_q8_0(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qmatvec_body<QT_Q8_0>(x, w, y, m, n, k); }
WG_KERNEL void qmatvec_q4_0(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qmatvec_body<QT_Q4_0>(x, w, y, m, n, k); }
WG_KERNEL void qmatvec_q4_1(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qmatvec_body<QT_Q4_1>(x, w, y, m, n, k); }
WG_KERNEL void qmatvec_q4_k(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qmatvec_body<QT_Q4_K>(x, w, y, m, n, k); }
WG_KERNEL void qmatvec_q6_k(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qmatvec_body<QT_Q6_K>(x, w, y, m, n, k); }
WG_KERNEL void qmatvec_iq4_nl(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qmatvec_body<QT_IQ4_NL>(x, w, y, m, n, k); }
WG_KERNEL void qgemm_q8_0(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qgemm_body<QT_Q8_0>(x, w, y, m, n, k); }
WG_KERNEL void qgemm_q4_0(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qgemm_body<QT_Q4_0>(x, w, y, m, n, k); }
WG_KERNEL void qgemm_q4_1(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qgemm_body<QT_Q4_1>(x, w, y, m, n, k); }
WG_KERNEL void qgemm_q4_k(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qgemm_body<QT_Q4_K>(x, w, y, m, n, k); }
WG_KERNEL void qgemm_q6_k(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qgemm_body<QT_Q6_K>(x, w, y, m, n, k); }
WG_KERNEL void qgemm_iq4_nl(const T_X* x, const u8* w, T_Y* y, u32 m, u32 n, u32 k) { qgemm_body<QT_IQ4_NL>(x, w, y, m, n, k); }
WG_KERNEL void qembedding_q8_0(const u8* t, const u32* ids, T_OUT* o, u32 v, u32 d, u32 f, u32 s) { qembedding_body<QT_Q8_0>(t, ids, o, v, d, f, s); }
WG_KERNEL void qembedding_q4_0(const u8* t, const u32* ids, T_OUT* o, u32 v, u32 d, u32 f, u32 s) { qembedding_body<QT_Q4_0>(t, ids, o, v, d, f, s); }
WG_KERNEL void qembedding_q4_1(const u8* t, const u32* ids, T_OUT* o, u32 v, u32 d, u32 f, u32 s) { qembedding_body<QT_Q4_1>(t, ids, o, v, d, f, s); }
WG_KERNEL void qembedding_q4_k(const u8* t, const u32* ids, T_OUT* o, u32 v, u32 d, u32 f, u32 s) { qembedding_body<QT_Q4_K>(t, ids, o, v, d, f, s); }
WG_KERNEL void qembedding_q6_k(const u8* t, const u32* ids, T_OUT* o, u32 v, u32 d, u32 f, u32 s) { qembedding_body<QT_Q6_K>(t, ids, o, v, d, f, s); }
WG_KERNEL void qembedding_iq4_nl(const u8* t, const u32* ids, T_OUT* o, u32 v, u32 d, u32 f, u32 s) { qembedding_body<QT_IQ4_NL>(t, ids, o, v, d, f, s); }
// clang-format on
