// A stacked q/k/v projection's tail in one kernel (RmsNormRopeKv): x [T, Hq + 2 Hkv, Dh] holds per
// token the q heads, the k heads and the v heads. One workgroup per (token, head):
//   q head h          -> norm_rope_row (rms_norm_rope_row.wgsl) into q [T, Hq, Dh]
//   k head Hq + j     -> norm_rope_row into k_pool row slots[t], head j
//   v head Hq + Hkv + j -> copied into v_pool row slots[t], head j
// Pool stores round to the pool's dtype (st_kp / st_vp, generated per dtype, 16-bit stores through
// atomics on their word). A slot past the pool (a contract violation the host checks,
// op::check_slots) is never written. The q and k rows are the bits rms_norm_rope gives them.
// Bindings: x, w, pos, cos, sin, slots (read), q, kp, vp (write; the pools in-out).

struct Params {
    offs: array<vec4<u32>, 3>,
    t: u32,
    hq: u32,
    hkv: u32,
    d: u32,
    rot: u32,
    eps: f32,
    max_pos: u32,
    wstride: u32,   // Dh when w is [Hq + Hkv, Dh] (a row a head), else 0
    rows: u32,      // NB * BS, pool rows
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

var<private> to_pool: bool;
var<private> bad_slot: bool;

fn put(e: u32, v: f32) {
    if (!to_pool) {
        st_q(e, v);
    } else if (!bad_slot) {
        st_kp(e, v);
    }
}

@compute @workgroup_size(WG)
fn rms_norm_rope_kv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) lid: u32) {
    let heads = p.hq + 2u * p.hkv;
    let row = group_index(wid, nwg);
    if (row >= p.t * heads) {
        return;
    }
    let t = row / heads;
    let h = row % heads;
    let base = row * p.d;
    let slot = ld_slots(t);
    if (h < p.hq) {
        to_pool = false;
        norm_rope_row(base, (t * p.hq + h) * p.d, h * p.wstride, ld_pos(t), lid);
    } else if (h < p.hq + p.hkv) {
        // no early return on a bad slot: the row's reduction has barriers
        to_pool = true;
        bad_slot = slot >= p.rows;
        let dst = (min(slot, p.rows - 1u) * p.hkv + h - p.hq) * p.d;
        norm_rope_row(base, dst, h * p.wstride, ld_pos(t), lid);
    } else {
        if (slot >= p.rows) {
            return;
        }
        let dst = (slot * p.hkv + h - p.hq - p.hkv) * p.d;
        for (var j = lid; j < p.d; j += WG) {
            st_vp(dst + j, ld_x(base + j));
        }
    }
}
