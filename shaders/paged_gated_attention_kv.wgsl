// paged_gated_attention, first dispatch: each new token's k (rms_norm (1 + kn), RoPE at its
// position) and v into the pool row its block table gives that position (paged_attention.wgsl),
// rounded to the pool's dtype by the store (st_kp / st_vp). One workgroup of WG threads per
// (token, kv head), the dims strided over the threads: the mean square is their strided partials
// summed by wg_sum (wg_tree.wgsl, prepended), so a token's key does not depend on the batch either (one
// thread walking the dims serialized all of a token's loads: the slowest dispatch of a decode
// step). Runs before the attention dispatch (paged_gated_attention.wgsl), which reads the pools
// as stored.
// Bindings: k, v, kn, cos, sin, bt, seqs (read), kp, vp (write; in-out). Constant: WG (a power
// of two).

@compute @workgroup_size(WG)
fn paged_gated_attention_kv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                            @builtin(local_invocation_index) lid: u32) {
    let item = group_index(wid, nwg);
    if (item >= p.t * p.hkv) {
        return;
    }
    let t = item / p.hkv;
    let g = item % p.hkv;
    let r = find_row(t);
    var slot = NO_ROW;
    if (r.ok) {
        tbl = r.s * p.mb;
        slot = pool_row(r.pos);
    }
    let src = (t * p.hkv + g) * p.dh;
    var ss = 0.0;
    for (var d = lid; d < p.dh; d += WG) {
        let x = ld_k(src + d);
        ss += x * x;
    }
    // every thread reaches the barriers; a row without a slot stores nothing after them
    let total = wg_sum(ss, lid);
    if (slot == NO_ROW) {
        return;
    }
    let dst = (slot * p.hkv + g) * p.dh;
    let inv = 1.0 / sqrt(total / f32(p.dh) + p.eps);
    for (var e = lid; e < p.half; e += WG) {
        let i1 = e + p.half;
        let c = ld_cos(r.pos * p.half + e);
        let s = ld_sin(r.pos * p.half + e);
        let a = ld_k(src + e) * inv * (1.0 + ld_kn(e));
        let b = ld_k(src + i1) * inv * (1.0 + ld_kn(i1));
        st_kp(dst + e, a * c - b * s);
        st_kp(dst + i1, b * c + a * s);
    }
    for (var d = 2u * p.half + lid; d < p.dh; d += WG) {
        st_kp(dst + d, ld_k(src + d) * inv * (1.0 + ld_kn(d)));
    }
    for (var d = lid; d < p.dh; d += WG) {
        st_vp(dst + d, ld_v(src + d));
    }
}
