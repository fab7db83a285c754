// Elementwise ops; each invocation owns two adjacent elements (2t, 2t+1) so 16-bit outputs are
// written a whole word at a time where aligned.
//   swiglu: y = silu(a) * b      add: y = a + b
// Bindings: a, b (read), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn pair_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (group_index(wid, nwg) * WG + lid) * 2u;
}

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

@compute @workgroup_size(WG)
fn swiglu(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let i = pair_index(wid, nwg, lid);
    if (i + 1u < p.n) {
        st2_y(i, silu(ld_a(i)) * ld_b(i), silu(ld_a(i + 1u)) * ld_b(i + 1u));
    } else if (i < p.n) {
        st_y(i, silu(ld_a(i)) * ld_b(i));
    }
}

@compute @workgroup_size(WG)
fn add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
       @builtin(local_invocation_index) lid: u32) {
    let i = pair_index(wid, nwg, lid);
    if (i + 1u < p.n) {
        st2_y(i, ld_a(i) + ld_b(i), ld_a(i + 1u) + ld_b(i + 1u));
    } else if (i < p.n) {
        st_y(i, ld_a(i) + ld_b(i));
    }
}

