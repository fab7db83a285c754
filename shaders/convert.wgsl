// Cast and copy; each invocation owns two adjacent elements (2t, 2t+1) so 16-bit outputs are
// written a whole word at a time where aligned.
//   convert: y = x re-encoded in y's dtype (round to nearest even)    copy: raw bits, any dtype
// Bindings: x (read), y (write).

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

@compute @workgroup_size(WG)
fn convert(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = pair_index(wid, nwg, lid);
    if (i + 1u < p.n) {
        st2_y(i, ld_x(i), ld_x(i + 1u));
    } else if (i < p.n) {
        st_y(i, ld_x(i));
    }
}

@compute @workgroup_size(WG)
fn copy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = pair_index(wid, nwg, lid);
    if (i + 1u < p.n) {
        st2bits_y(i, ldbits_x(i), ldbits_x(i + 1u));
    } else if (i < p.n) {
        stbits_y(i, ldbits_x(i));
    }
}

