// The x-limbs pre-pass (limbs.wgsl, prepended): one invocation a 32-element block of an f32
// x[M, K] (K % 32 == 0), its 7 vec4 words (28 u32) into xl, block after block. The matvec's
// limb lanes (q4_k_dp.wgsl through qmatvec.wgsl) read them as their x.
// Bindings: x (read as vec4 words: x_v4, f32 bits, starting on a vec4), xl (write, u32).

struct Params {
    offs: array<vec4<u32>, 2>,
    blocks: u32, // M * K / 32
    _p0: u32,
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
    let w = t * 28u;
    put4(w, l.v0);
    put4(w + 4u, l.v1);
    put4(w + 8u, l.v2);
    put4(w + 12u, l.v3);
    put4(w + 16u, l.v4);
    put4(w + 20u, l.v5);
    put4(w + 24u, l.info);
}
