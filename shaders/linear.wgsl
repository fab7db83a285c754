// linear: y[M, N] = x[M, K] · W[N, K]ᵀ, f32 accumulation. linear/ prepends this file to
// matvec.wgsl.
// Constants from linear/: X_KIND / W_KIND (0 f32, 1 f16, 2 bf16; X_KIND 3: x is f32 (gate, up)
// pairs [M, 2K] read as swiglu, swiglu_linear); ALIGNED: every pair the kernel loads starts on a
// word (16-bit operands have even offsets and K is even).
// Bindings: x (read), w (read), y (write); their element offsets are p.offs[0].x / .y / .z.

struct Params {
    offs: array<vec4<u32>, 2>,
    m: u32,
    n: u32,
    k: u32,
    _pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// Two adjacent elements from raw bits: f32 takes a word each (lo, hi); 16-bit kinds take both
// from `lo`, low half first.
fn bits_pair(kind: u32, lo: u32, hi: u32) -> vec2<f32> {
    if (kind == 0u) {
        return vec2<f32>(bitcast<f32>(lo), bitcast<f32>(hi));
    }
    if (kind == 1u) {
        return unpack2x16float(lo);
    }
    return vec2<f32>(bitcast<f32>(lo << 16u), bitcast<f32>(lo & 0xffff0000u));
}

// Elements e and e + 1 of w / x, e an absolute element index (binding offset already added).
// 16-bit data at an odd e straddles two words.
fn w_pair(e: u32) -> vec2<f32> {
    if (W_KIND == 0u) {
        return bits_pair(0u, w_buf[e], w_buf[e + 1u]);
    }
    let h = e >> 1u;
    var bits = w_buf[h];
    if (!ALIGNED && (e & 1u) != 0u) {
        bits = (bits >> 16u) | (w_buf[h + 1u] << 16u);
    }
    return bits_pair(W_KIND, bits, 0u);
}

// silu(gate) * up, as swiglu_pairs.wgsl computes it (the same bits)
fn swiglu_of(g: f32, u: f32) -> f32 {
    return g / (1.0 + exp(-g)) * u;
}

fn x_pair(e: u32) -> vec2<f32> {
    if (X_KIND == 3u) {
        // logical element e (binding offset P included) is the pair at word P + 2 (e - P)
        let w = 2u * e - p.offs[0].x;
        return vec2<f32>(swiglu_of(bitcast<f32>(x_buf[w]), bitcast<f32>(x_buf[w + 1u])),
                         swiglu_of(bitcast<f32>(x_buf[w + 2u]), bitcast<f32>(x_buf[w + 3u])));
    }
    if (X_KIND == 0u) {
        return bits_pair(0u, x_buf[e], x_buf[e + 1u]);
    }
    let h = e >> 1u;
    var bits = x_buf[h];
    if (!ALIGNED && (e & 1u) != 0u) {
        bits = (bits >> 16u) | (x_buf[h + 1u] << 16u);
    }
    return bits_pair(X_KIND, bits, 0u);
}

// Element e of x (relative to the binding's offset), for the odd K tail.
fn x_one(e: u32) -> f32 {
    if (X_KIND == 3u) {
        return swiglu_of(ld_x(2u * e), ld_x(2u * e + 1u));
    }
    return ld_x(e);
}
