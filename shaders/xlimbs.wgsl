// The x-limbs pre-pass (limbs.wgsl, prepended): one invocation a 32-element block of an f32
// x[M, K] (K % 64 == 0), its 7 vec4 words (28 u32) into xl in the slot-major order of
// limbs.wgsl. The matvec's limb lanes (q4_k_dp.wgsl through qmatvec.wgsl) read them as their x.
// Bindings: x (read as vec4 words: x_v4, f32 bits, starting on a vec4), xl (write, u32).

struct Params {
    offs: array<vec4<u32>, 2>,
    blocks: u32, // M * K / 32
    slots: u32, // K / 64: a row's 64-element slots (the words' stride, limbs.wgsl)
    _p1: u32,
    _p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn put4(w: u32, v: vec4<u32>) {
    stbits_xl(w, v.x);
    stbits_xl(w + 1u, v.y);
    stbits_xl(w + 2u, v.z);
    stbits_xl(w + 3u, v.w);
}

@compute @workgroup_size(64)
fn xlimbs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if (t >= p.blocks) {
        return;
    }
    let l = limbs_at((p.offs[0].x >> 2u) + t * 8u);
    // block t is half t & 1 of slot c of row m: its word j at vec4 m * 14 S + (7 h + j) S + c
    let bpr = 2u * p.slots;
    let c = (t % bpr) >> 1u;
    let v0 = (t / bpr) * 14u * p.slots + (t & 1u) * 7u * p.slots + c;
    put4(v0 * 4u, l.v0);
    put4((v0 + p.slots) * 4u, l.v1);
    put4((v0 + 2u * p.slots) * 4u, l.v2);
    put4((v0 + 3u * p.slots) * 4u, l.v3);
    put4((v0 + 4u * p.slots) * 4u, l.v4);
    put4((v0 + 5u * p.slots) * 4u, l.v5);
    put4((v0 + 6u * p.slots) * 4u, l.info);
}
