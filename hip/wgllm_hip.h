// wgllm_hip.h: the one header every hip/*.hip kernel includes.
//
// The kernels are HIP C++ restricted to what also compiles as CUDA. They rely on compiler builtins
// only (no HIP or CUDA headers): on AMD this header maps indexing, barriers and wave shuffles to
// clang's amdgcn builtins, so `clang-19 -x hip -nogpuinc -nogpulib` compiles them for gfx1100 and
// gfx1151, and hiprtc compiles the same text on a ROCm machine. For NVIDIA the cuda backend
// prepends hip/cuda_prelude.h (which defines WGLLM_CUDA and the same primitives over CUDA's
// built-ins) and compiles through NVRTC.
//
// Conventions: blocks are WG_BLOCK threads, one dimension; grid.x carries rows (large), grid.y
// small counts. 16-bit floats are stored as raw bits (wg_f16 / wg_bf16) and converted in integer
// arithmetic, round to nearest even, exactly as src/dtype.rs and shaders/common.wgsl do, so casts
// and copies are bit-exact with the CPU reference. Math is f32.
#pragma once

#define WG_BLOCK 256

typedef unsigned int u32;
typedef int i32;
typedef unsigned short u16;
typedef unsigned long long u64;

#ifndef WGLLM_CUDA
// ---- AMD (HIP through clang or hiprtc): compiler builtins only ----
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#define WG_DEV static __device__ inline __attribute__((always_inline))
#define WG_KERNEL extern "C" __global__ __attribute__((amdgpu_flat_work_group_size(1, WG_BLOCK)))

WG_DEV u32 wg_tid() { return __builtin_amdgcn_workitem_id_x(); }
WG_DEV u32 wg_bid_x() { return __builtin_amdgcn_workgroup_id_x(); }
WG_DEV u32 wg_bid_y() { return __builtin_amdgcn_workgroup_id_y(); }
WG_DEV void wg_sync() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// The device's wave size: 32 on RDNA (gfx11), 64 on CDNA.
WG_DEV u32 wg_wave() { return __builtin_amdgcn_wavefrontsize(); }
WG_DEV u32 wg_lane_id() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
WG_DEV u32 wg_shfl_xor(u32 v, u32 mask) {
    return (u32)__builtin_amdgcn_ds_bpermute((int)((wg_lane_id() ^ mask) << 2), (int)v);
}
WG_DEV float wg_bits_f(u32 u) { return __builtin_bit_cast(float, u); }
WG_DEV u32 wg_f_bits(float f) { return __builtin_bit_cast(u32, f); }
WG_DEV float wg_exp(float x) { return __builtin_expf(x); }
WG_DEV float wg_sqrt(float x) { return __builtin_sqrtf(x); }
// a * b rounded on its own: the compilers contract a product and a later add into an FMA by
// default, which changes the last bit of values that must match the reference exactly (the
// dequantized embedding). The empty asm makes the product opaque, so no add can fuse with it.
WG_DEV float wg_mul_rn(float a, float b) {
    float p = a * b;
    __asm__("" : "+v"(p));
    return p;
}
#endif

// ---- 16-bit storage types and conversions (integer arithmetic, round to nearest even) ----
struct wg_f16 { u16 bits; };
struct wg_bf16 { u16 bits; };

WG_DEV float wg_bf16_to_f32(u32 h) { return wg_bits_f(h << 16); }

// Twin of dtype::f32_to_bf16_bits: NaN stays a quiet NaN with its sign.
WG_DEV u32 wg_f32_to_bf16(float v) {
    u32 b = wg_f_bits(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16) | 0x40u) & 0xffffu;
    return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

// f16 bits -> f32, exact; subnormals normalised in integers; NaN comes back quiet (as `half` does).
WG_DEV float wg_f16_to_f32(u32 h) {
    u32 s = (h & 0x8000u) << 16;
    u32 e = (h >> 10) & 0x1fu;
    u32 m = h & 0x3ffu;
    if (e == 0u) {
        if (m == 0u) return wg_bits_f(s);
        u32 ee = 113u;
        while ((m & 0x400u) == 0u) {
            m <<= 1;
            ee -= 1u;
        }
        return wg_bits_f(s | (ee << 23) | ((m & 0x3ffu) << 13));
    }
    if (e == 31u) return wg_bits_f(s | 0x7f800000u | (m != 0u ? 0x400000u : 0u) | (m << 13));
    return wg_bits_f(s | ((e + 112u) << 23) | (m << 13));
}

// f32 -> f16 bits; overflow to inf; NaN stays NaN (quiet, top mantissa bits kept). Twin of
// f32_to_f16_bits in shaders/common.wgsl.
WG_DEV u32 wg_f32_to_f16(float v) {
    u32 b = wg_f_bits(v);
    u32 s = (b >> 16) & 0x8000u;
    u32 e = (b >> 23) & 0xffu;
    u32 m = b & 0x7fffffu;
    if (e == 255u) return s | 0x7c00u | (m != 0u ? (0x200u | (m >> 13)) : 0u);
    i32 ue = (i32)e - 127 + 15;
    if (ue >= 31) return s | 0x7c00u;
    if (ue <= 0) {
        if (ue < -10) return s;
        u32 mm = m | 0x800000u;
        u32 shift = (u32)(14 - ue);
        u32 r = mm >> shift;
        u32 rem = mm & ((1u << shift) - 1u);
        u32 halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (r & 1u) == 1u)) r += 1u;
        return s | r;
    }
    u32 r = ((u32)ue << 10) | (m >> 13);
    u32 rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) == 1u)) r += 1u;
    return s | r;
}

// Loads convert to f32, stores round from f32: one overload per storage type, so a kernel body
// is the same for every dtype (the T_* macros pick the types; the backend passes -DT_X=wg_bf16 ...).
WG_DEV float ld(const float* p, u64 i) { return p[i]; }
WG_DEV float ld(const wg_f16* p, u64 i) { return wg_f16_to_f32(p[i].bits); }
WG_DEV float ld(const wg_bf16* p, u64 i) { return wg_bf16_to_f32(p[i].bits); }
WG_DEV void st(float* p, u64 i, float v) { p[i] = v; }
WG_DEV void st(wg_f16* p, u64 i, float v) { p[i].bits = (u16)wg_f32_to_f16(v); }
WG_DEV void st(wg_bf16* p, u64 i, float v) { p[i].bits = (u16)wg_f32_to_bf16(v); }

// 16 aligned bytes of a row at once (the matvec's weight stream): `p + i` must be 16-byte aligned.
// Writes the 4 (f32) or 8 (f16, bf16) elements to `o` as f32.
struct __attribute__((aligned(16))) wg_u4 { u32 x, y, z, w; };
WG_DEV void ld16(const float* p, u64 i, float* o) {
    wg_u4 v = *(const wg_u4*)(p + i);
    o[0] = wg_bits_f(v.x); o[1] = wg_bits_f(v.y); o[2] = wg_bits_f(v.z); o[3] = wg_bits_f(v.w);
}
WG_DEV void ld16(const wg_f16* p, u64 i, float* o) {
    wg_u4 v = *(const wg_u4*)(p + i);
    u32 u[4] = {v.x, v.y, v.z, v.w};
    for (u32 j = 0; j < 4u; j++) {
        o[2u * j] = wg_f16_to_f32(u[j] & 0xffffu);
        o[2u * j + 1u] = wg_f16_to_f32(u[j] >> 16);
    }
}
WG_DEV void ld16(const wg_bf16* p, u64 i, float* o) {
    wg_u4 v = *(const wg_u4*)(p + i);
    u32 u[4] = {v.x, v.y, v.z, v.w};
    for (u32 j = 0; j < 4u; j++) {
        o[2u * j] = wg_bf16_to_f32(u[j] & 0xffffu);
        o[2u * j + 1u] = wg_bf16_to_f32(u[j] >> 16);
    }
}

// ---- reductions ----
// Over the whole wave (32 or 64 lanes); every lane gets the result.
WG_DEV float wg_wave_sum(float v) {
    for (u32 o = wg_wave() / 2u; o > 0u; o >>= 1) v += wg_bits_f(wg_shfl_xor(wg_f_bits(v), o));
    return v;
}
WG_DEV float wg_wave_max(float v) {
    for (u32 o = wg_wave() / 2u; o > 0u; o >>= 1) {
        float w = wg_bits_f(wg_shfl_xor(wg_f_bits(v), o));
        v = w > v ? w : v;
    }
    return v;
}

// Over the block; every thread must call it and every thread gets the result. The partials are
// summed in a fixed order, so the result is the same on every thread.
WG_DEV float wg_block_sum(float v) {
    __shared__ float part[WG_BLOCK / 32];
    v = wg_wave_sum(v);
    u32 wave = wg_wave(), tid = wg_tid();
    if (tid % wave == 0u) part[tid / wave] = v;
    wg_sync();
    float s = 0.0f;
    for (u32 i = 0; i < WG_BLOCK / wave; i++) s += part[i];
    wg_sync();
    return s;
}
// 1 / sqrt(mean(x^2) + eps) of a row of d elements, from each thread's partial sum of squares
// `ss`; every thread must call it and every thread gets the result (the RMSNorm scale).
WG_DEV float wg_inv_rms(float ss, u32 d, float eps) { return 1.0f / wg_sqrt(wg_block_sum(ss) / (float)d + eps); }
// The same over the row x[base .. base + d), read by the block in WG_BLOCK strides.
template <typename T> WG_DEV float wg_inv_rms_row(const T* x, u64 base, u32 d, float eps) {
    float ss = 0.0f;
    for (u32 j = wg_tid(); j < d; j += WG_BLOCK) {
        float v = ld(x, base + j);
        ss += v * v;
    }
    return wg_inv_rms(ss, d, eps);
}
WG_DEV float wg_block_max(float v) {
    __shared__ float part[WG_BLOCK / 32];
    v = wg_wave_max(v);
    u32 wave = wg_wave(), tid = wg_tid();
    if (tid % wave == 0u) part[tid / wave] = v;
    wg_sync();
    float s = part[0];
    for (u32 i = 1; i < WG_BLOCK / wave; i++) s = part[i] > s ? part[i] : s;
    wg_sync();
    return s;
}

// Order-preserving key of an f32's bits: larger key = larger value; NaN -> 1, below every number;
// -0 -> the key of +0; 0 is left free as "nothing". Same as shaders/argmax.wgsl.
WG_DEV u32 wg_okey(float f) {
    u32 b = wg_f_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return 1u;
    if (b == 0x80000000u) return 0x80000000u;
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}
// (ka, ia) comes first: larger key, then lower index.
WG_DEV bool wg_first(u32 ka, u32 ia, u32 kb, u32 ib) { return ka > kb || (ka == kb && ia < ib); }

// The first (key, index) pair of the block; every thread must call it; all get the winner.
WG_DEV void wg_block_first(u32* k, u32* i) {
    __shared__ u32 pk[WG_BLOCK / 32];
    __shared__ u32 pi[WG_BLOCK / 32];
    u32 bk = *k, bi = *i;
    for (u32 o = wg_wave() / 2u; o > 0u; o >>= 1) {
        u32 k2 = wg_shfl_xor(bk, o), i2 = wg_shfl_xor(bi, o);
        if (wg_first(k2, i2, bk, bi)) {
            bk = k2;
            bi = i2;
        }
    }
    u32 wave = wg_wave(), tid = wg_tid();
    if (tid % wave == 0u) {
        pk[tid / wave] = bk;
        pi[tid / wave] = bi;
    }
    wg_sync();
    bk = pk[0];
    bi = pi[0];
    for (u32 w = 1; w < WG_BLOCK / wave; w++) {
        if (wg_first(pk[w], pi[w], bk, bi)) {
            bk = pk[w];
            bi = pi[w];
        }
    }
    wg_sync();
    *k = bk;
    *i = bi;
}
