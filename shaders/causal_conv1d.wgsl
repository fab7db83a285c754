// Depthwise causal conv1d over the sequence + SiLU (Qwen3.5's linear-attention conv), and its
// one-token decode update. x [T, C], w [C, K], state [K-1, C] (the previous K-1 inputs, oldest
// first) -> y [T, C], state_out [K-1, C]. With xp = cat(state, x) ([K-1+T, C]):
//   y[t, c] = silu(sum_j w[c, j] * xp[t + j, c])     (w[c, K-1] weighs the current token)
//   state_out[r, c] = xp[T + r, c]                    (the last K-1 inputs)
// Math in f32. state and state_out are distinct tensors (the caller ping-pongs them).
// Bindings: x, w, state (read), y, state_out (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,          // tokens
    c: u32,          // channels
    k: u32,          // kernel size
    n: u32,          // work items: (T + K - 1) * C (causal_conv1d) or C (causal_conv1d_update)
}
@group(0) @binding(0) var<uniform> p: Params;

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

// Row r of xp = cat(state, x), channel ch.
fn xp(r: u32, ch: u32) -> f32 {
    if (r + 1u < p.k) {
        return ld_state(r * p.c + ch);
    }
    return ld_x((r + 1u - p.k) * p.c + ch);
}

fn conv_at(t: u32, ch: u32) -> f32 {
    var s = 0.0;
    for (var j = 0u; j < p.k; j++) {
        s = fma(ld_w(ch * p.k + j), xp(t + j, ch), s);
    }
    return silu(s);
}

// Items 0..T*C: one output each; items T*C..(T+K-1)*C: one state_out element each.
@compute @workgroup_size(WG)
fn causal_conv1d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg) * WG + lid;
    if (g >= p.n) {
        return;
    }
    let ny = p.t * p.c;
    if (g < ny) {
        st_y(g, conv_at(g / p.c, g % p.c));
    } else {
        let e = g - ny;
        let r = e / p.c;
        st_state_out(e, xp(p.t + r, e % p.c));
    }
}

// One token: one item per channel computes its output and rolls its state column by one.
@compute @workgroup_size(WG)
fn causal_conv1d_update(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let ch = group_index(wid, nwg) * WG + lid;
    if (ch >= p.c) {
        return;
    }
    st_y(ch, conv_at(0u, ch));
    for (var r = 0u; r + 1u < p.k; r++) {
        st_state_out(r * p.c + ch, xp(r + 1u, ch));
    }
}
