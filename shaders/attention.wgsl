// Causal GQA attention over a KV cache: q [T, Hq, Dh], k / v [S, Hkv, Dh] (rows 0..n_past + T
// are read), o [T, Hq, Dh]. Query t sits at position n_past + t and sees keys 0..=n_past + t;
// query head h reads kv head h / group. This file (Params) comes with the key loop and the kernel:
// attention_decode_loop.wgsl + attention_decode.wgsl (T == 1) or attention_prefill_loop.wgsl +
// attention_prefill.wgsl (T > 1); attention.rs adds ld4_q / ld4_k / ld4_v (four elements ->
// vec4<f32>, generated per dtype).
// Bindings: q, k, v (read), o (write).
// paged_attention_prefill.wgsl gives the prefill kernel the same two functions below over a paged
// pool (paged_attention_prefill.rs).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,
    group: u32,
    scale: f32,
    nqb: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// The prefill loop's first query position: n_past, from the host.
fn prefill_n_past(tid: u32) -> u32 {
    return p.n_past;
}

// A contiguous cache's rows need nothing a staged block (paged_attention_prefill.wgsl's look
// their pool block up).
fn kv_block(k0: u32, kv_end: u32) {}

// Elements off..off + 4 of key row `key` of k (which == 0u) or v (attention_prefill.wgsl's staging).
fn kv_vec(which: u32, key: u32, off: u32) -> vec4<f32> {
    let i = key * p.hkv * p.dh + off;
    if (which == 0u) {
        return ld4_k(i);
    }
    return ld4_v(i);
}
