// Causal GQA attention over a KV cache: q [T, Hq, Dh], k / v [S, Hkv, Dh] (rows 0..n_past + T
// are read), o [T, Hq, Dh]. Query t sits at position n_past + t and sees keys 0..=n_past + t;
// query head h reads kv head h / group. This file (Params) comes with the key loop and the kernel:
// attention_decode_loop.wgsl + attention_decode.wgsl (T == 1) or attention_prefill_loop.wgsl +
// attention_prefill.wgsl (T > 1); attention.rs adds ld4_q / ld4_k / ld4_v (four elements ->
// vec4<f32>, generated per dtype).
// Bindings: q, k, v (read), o (write).

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
