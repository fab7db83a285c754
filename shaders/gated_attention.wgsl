// Qwen3.5's gated full attention, fused: per-head q/k RMSNorm (x̂ (1 + w)), partial NeoX RoPE on
// the first R = 2 * half dims at positions n_past + t, k and v written into the cache rows
// n_past..n_past+T, causal GQA attention over the cache, output * sigmoid(gate).
// qg [T, Hq, 2 Dh] holds per head the query (first Dh) and its output gate (second Dh).
// New keys and values are used as the cache stores them (rounded to its dtype, rnd_kc / rnd_vc), so
// the result equals the composition norm -> rope -> cache -> attention -> gate. Rows below n_past
// are read from the cache; new rows come from k / v (every workgroup normalises the ones it needs;
// the first query head of each kv group writes its own tokens' rows, so no row is both read and
// written by different workgroups).
//   gated_attention_decode  (T == 1): one workgroup of NT per query head; the new key / value in
//                           workgroup memory, cached keys in chunks of NT (attention_decode_loop.wgsl)
//   gated_attention_prefill (T > 1): one workgroup of NT per (block of BQ queries, query head), key
//                           blocks of BK staged, online softmax (attention_prefill_loop.wgsl)
// This file (Params) comes with the loop file and gated_attention_decode.wgsl or
// gated_attention_prefill.wgsl (gated_attention.rs).
// Bindings: qg, k, v, qn, kn, cos, sin (read), o, kc, vc (write; kc/vc are in-out).
// Constants: DH4 (Dh / 4), NT; BQ, BK, TM, TN (prefill). ld4_kc / ld4_vc / rnd_kc / rnd_vc come
// from gated_attention.rs (per dtype). The output is stored in o's own dtype (st_o / st2_o,
// generated from the output binding).

struct Params {
    offs: array<vec4<u32>, 3>,
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,
    group: u32,      // Hq / Hkv
    scale: f32,
    nqb: u32,        // query blocks (prefill)
    half: u32,       // rotary_dim / 2
    eps: f32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// The prefill loop's first query position: n_past, from the host.
fn prefill_n_past(tid: u32) -> u32 {
    return p.n_past;
}
