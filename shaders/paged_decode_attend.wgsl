// decode_attend's key and value reads (attention_decode_loop.wgsl) through the block table
// (paged_pool.wgsl's pool_row): the paged_gated_attention kernels' glue, put between
// paged_attention.wgsl and attention_decode_loop.wgsl. (paged_attention has its own loop,
// paged_attention_loop.wgsl.)

// key_dot's loads (attention_decode_loop.wgsl). This kernel's decode_score keeps one load at a
// time: eight in flight made a 64-sequence step slower.
fn ld4_key(i: u32) -> vec4<f32> {
    return ld4_kp(i);
}

fn decode_score(key: u32, kbase: u32) -> f32 {
    let r = pool_row(key);
    if (r == NO_ROW) {
        return bitcast<f32>(nan_bits);
    }
    let kb = r * (p.hkv * p.dh) + kbase;
    var dot = vec4<f32>(0.0);
    for (var d4 = 0u; d4 < DH4; d4++) {
        dot += q_s[d4] * ld4_kp(kb + d4 * 4u);
    }
    return dot.x + dot.y + dot.z + dot.w;
}

fn decode_value(key: u32, kbase: u32, c4: u32) -> vec4<f32> {
    let r = pool_row(key);
    if (r == NO_ROW) {
        return vec4<f32>(bitcast<f32>(nan_bits));
    }
    return ld4_vp(r * (p.hkv * p.dh) + kbase + c4 * 4u);
}
