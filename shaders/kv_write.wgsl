// KvWrite (vLLM's reshape_and_cache): k / v [T, Hkv, Dh] -> pool rows slots[t] of k_pool / v_pool
// [NB, BS, Hkv, Dh]. One thread per element of k (and the same element of v); the store rounds to
// the pool's dtype (st_kp / st_vp, generated per dtype: round to nearest even, 16-bit stores
// through atomics on their word, so neighbouring elements are never clobbered). A slot past the
// pool (a contract violation the host checks, op::check_slots) is skipped, never written.
// Bindings: k, v, slots (read), kp, vp (write; in-out). Constant: WG (workgroup size).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    row: u32,     // Hkv * Dh, elements per token
    rows: u32,    // NB * BS, pool rows
    _pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn kv_write(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let e = group_index(wid, nwg) * WG + lid;
    if (e >= p.t * p.row) {
        return;
    }
    let t = e / p.row;
    let slot = ld_slots(t);
    if (slot >= p.rows) {
        return;
    }
    let dst = slot * p.row + e % p.row;
    st_kp(dst, ld_k(e));
    st_vp(dst, ld_v(e));
}
