// emu_prelude.h: runs the hip/ kernels as plain C++ on the CPU, for testing their logic without a
// GPU (src/backend/native/emu.rs; test-only). Each launch runs its blocks one after another on
// WG_BLOCK host threads: wg_sync is a block barrier, a wave shuffle goes through a per-wave
// exchange array between two wave barriers, and __shared__ arrays are statics (one block at a
// time). Waves are 32 lanes. Nothing here is fast; it is only faithful.
#define WGLLM_CUDA 1
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>
#define WG_DEV static inline
#define WG_KERNEL extern "C"
#define __shared__ static

inline thread_local unsigned wg_emu_tid, wg_emu_bx, wg_emu_by;
inline std::barrier<>* wg_emu_block_bar;
inline std::barrier<>* wg_emu_wave_bar[8];
inline unsigned wg_emu_xch[256];

WG_DEV unsigned wg_tid() { return wg_emu_tid; }
WG_DEV unsigned wg_bid_x() { return wg_emu_bx; }
WG_DEV unsigned wg_bid_y() { return wg_emu_by; }
WG_DEV void wg_sync() { wg_emu_block_bar->arrive_and_wait(); }
WG_DEV unsigned wg_wave() { return 32u; }
WG_DEV unsigned wg_shfl_xor(unsigned v, unsigned m) {
    unsigned t = wg_emu_tid;
    wg_emu_xch[t] = v;
    wg_emu_wave_bar[t / 32u]->arrive_and_wait();
    unsigned r = wg_emu_xch[(t & ~31u) | ((t & 31u) ^ m)];
    wg_emu_wave_bar[t / 32u]->arrive_and_wait();
    return r;
}
WG_DEV float wg_bits_f(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
WG_DEV unsigned wg_f_bits(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
WG_DEV float wg_exp(float x) { return std::exp(x); }
WG_DEV float wg_sqrt(float x) { return std::sqrt(x); }
// the host build targets plain x86-64 (no FMA), and the volatile keeps the product rounded anyway
WG_DEV float wg_mul_rn(float a, float b) { volatile float p = a * b; return p; }

template <class... A, std::size_t... I>
static void wg_emu_call(void (*k)(A...), void** args, std::index_sequence<I...>) {
    k(*(A*)args[I]...);
}

template <class... A>
static void wg_emu_run(void (*k)(A...), unsigned gx, unsigned gy, void** args) {
    std::barrier<> block(256);
    std::vector<std::unique_ptr<std::barrier<>>> waves;
    for (int w = 0; w < 8; w++) {
        waves.push_back(std::make_unique<std::barrier<>>(32));
        wg_emu_wave_bar[w] = waves.back().get();
    }
    wg_emu_block_bar = &block;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 256u; t++) {
        ts.emplace_back([=, &block] {
            wg_emu_tid = t;
            for (unsigned by = 0; by < gy; by++) {
                for (unsigned bx = 0; bx < gx; bx++) {
                    wg_emu_bx = bx;
                    wg_emu_by = by;
                    wg_emu_call(k, args, std::index_sequence_for<A...>{});
                    block.arrive_and_wait();
                }
            }
        });
    }
    for (auto& t : ts) t.join();
}
#define WG_EMU_ENTRY(name) \
    extern "C" void wg_emu_launch_##name(unsigned gx, unsigned gy, void** args) { wg_emu_run(name, gx, gy, args); }
