// The second pass of a split-K tensor-core linear (linear_coop.wgsl with KC > 0): y = the S
// partials of each output added in split order s = 0, 1, ..., S - 1 (fixed by K and KC, never by
// M: the batch-invariance argument of linear_coop.wgsl). With SWIGLU the partials are (gate, up)
// pairs, columns 2j and 2j + 1 of a row of N, and y[m, j] is swiglu_pairs.wgsl's formula of
// their sums; else y[m, n] is the sum. One output per invocation. Params.s is S (the kernel's
// variant holds it too: its sum is unrolled).
// Bindings: x (the [S, M, N] partials, read), y (write). Constants: WG, SWIGLU.

struct Params {
    offs: array<vec4<u32>, 2>,
    m: u32,
    n: u32,
    s: u32,
    _pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn partial(s: u32, i: u32) -> f32 {
    return ld_x(s * p.m * p.n + i);
}

// the S partials loaded together, then added in order (straight-line code from linear/mod.rs
// `split_sum`: in a loop each load waited on the sum before it)
fn total(i: u32) -> f32 {
    //@sum
}

@compute @workgroup_size(WG)
fn linear_splitk(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let j = group_index(wid, nwg) * WG + lid;
    if (SWIGLU) {
        if (j < p.m * (p.n / 2u)) {
            let g = total(2u * j);
            st_y(j, g / (1.0 + exp(-g)) * total(2u * j + 1u));
        }
    } else if (j < p.m * p.n) {
        st_y(j, total(j));
    }
}
