// swiglu over interleaved (gate, up) pairs, as the fused gate/up projection writes them:
//   y[j] = silu(x[2j]) * x[2j+1], one output per invocation.
// Its own module: convert.wgsl's entry points must also compile for integer copies.
// Bindings: x (read), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn swiglu_pairs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let j = group_index(wid, nwg) * WG + lid;
    if (j < p.n) {
        let g = ld_x(2u * j);
        st_y(j, g / (1.0 + exp(-g)) * ld_x(2u * j + 1u));
    }
}
