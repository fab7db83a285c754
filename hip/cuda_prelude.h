// cuda_prelude.h: the thin compatibility prelude that lets the hip/ kernels compile as CUDA.
// The cuda backend prepends it to a kernel's source before NVRTC; it defines WGLLM_CUDA and the
// primitives that wgllm_hip.h otherwise maps to amdgcn builtins. Nothing else differs.
#define WGLLM_CUDA 1
#define WG_DEV static __device__ __forceinline__
#define WG_KERNEL extern "C" __global__ __launch_bounds__(WG_BLOCK)

WG_DEV unsigned int wg_tid() { return threadIdx.x; }
WG_DEV unsigned int wg_bid_x() { return blockIdx.x; }
WG_DEV unsigned int wg_bid_y() { return blockIdx.y; }
WG_DEV void wg_sync() { __syncthreads(); }
// A warp is 32 lanes on every NVIDIA GPU.
WG_DEV unsigned int wg_wave() { return 32u; }
WG_DEV unsigned int wg_shfl_xor(unsigned int v, unsigned int mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }
WG_DEV float wg_bits_f(unsigned int u) { return __uint_as_float(u); }
WG_DEV unsigned int wg_f_bits(float f) { return __float_as_uint(f); }
WG_DEV float wg_exp(float x) { return expf(x); }
WG_DEV float wg_sqrt(float x) { return sqrtf(x); }
// a * b never contracted into an FMA (NVRTC fuses by default): see wgllm_hip.h.
WG_DEV float wg_mul_rn(float a, float b) { return __fmul_rn(a, b); }
