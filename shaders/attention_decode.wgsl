// Decode attention: one workgroup per (query t, query head h); T is usually 1.
// Query t sits at position n_past + t and sees keys 0..kv_len, kv_len = n_past + t + 1.
// Query head h reads kv head h / group. The key loop is decode_attend (attention_decode_loop.wgsl);
// this kernel stages the scaled query, reads keys and values from k / v (vec4 loads) and stores.
// Params and bindings: attention.wgsl. Constants: DH4 (head_dim / 4), NT (workgroup size).

fn ld4_key(i: u32) -> vec4<f32> {
    return ld4_k(i);
}

fn decode_score(key: u32, kbase: u32) -> f32 {
    return key_dot(key * (p.hkv * p.dh) + kbase);
}

fn decode_value(key: u32, kbase: u32, c4: u32) -> vec4<f32> {
    return ld4_v(key * (p.hkv * p.dh) + kbase + c4 * 4u);
}

@compute @workgroup_size(NT)
fn attention_decode(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.t * p.hq) {
        return;
    }
    let t = idx / p.hq;
    let h = idx % p.hq;
    let qrow = (t * p.hq + h) * p.dh;

    for (var d4 = tid; d4 < DH4; d4 += NT) {
        q_s[d4] = ld4_q(qrow + d4 * 4u) * p.scale;
    }
    workgroupBarrier();

    let o = decode_attend(tid, p.n_past + t + 1u, (h / p.group) * p.dh);
    if (tid < DH4) {
        st2_o(qrow + tid * 4u, o.x, o.y);
        st2_o(qrow + tid * 4u + 2u, o.z, o.w);
    }
}
