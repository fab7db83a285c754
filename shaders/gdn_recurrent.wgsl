// gdn_recurrent: the gated delta rule token by token over one sequence (the decode form; any T
// works). One workgroup per (value head h, tile of TJ value columns), running gdn_rec_tile
// (gdn_recurrent_tile.wgsl: the math and the thread layout) over all T tokens.
// Bindings: qkv, b, a, a_log, dt_bias, state (f32) (read), o, state_out (f32) (write).
// Constants: DK (key head dim), NT (workgroup size), TJ (columns per workgroup),
// RMAX = ceil(DK / (NT / TJ)).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    nk: u32,
    nv: u32,
    dk: u32,
    dv: u32,
    c: u32,          // qkv row width: 2 * nk * dk + nv * dv
    group: u32,      // nv / nk
    ntiles: u32,     // ceil(dv / TJ)
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(NT)
fn gdn_recurrent(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.nv * p.ntiles) {
        return;
    }
    let h = idx / p.ntiles;
    gdn_rec_tile(h, idx % p.ntiles, tid, 0u, p.t, h * DK * p.dv, false);
}
