// Prefill attention: the key-block loop is prefill_attend (attention_prefill_loop.wgsl); this
// kernel gives the scaled query, stages key and value rows from k / v (vec4 loads) and stores the
// output.
// Params and bindings: attention.wgsl. Constants: attention_prefill_loop.wgsl's.

// Rows k0 .. k0 + BK of k (which == 0u) or v into kv_s; rows at or past kv_end are zeros.
fn stage(which: u32, tid: u32, k0: u32, b: QBlock) {
    let kstride = p.hkv * p.dh;
    for (var e = tid; e < BK * DH4; e += NT) {
        let j = e / DH4;
        let d4 = e % DH4;
        var x = vec4<f32>(0.0);
        if (k0 + j < b.kv_end) {
            let i = (k0 + j) * kstride + b.kbase + d4 * 4u;
            if (which == 0u) {
                x = ld4_k(i);
            } else {
                x = ld4_v(i);
            }
        }
        kv_s[j * QS + d4] = x;
    }
}

// The scaled query.
fn prefill_q(b: QBlock, i: u32, d4: u32) -> vec4<f32> {
    return ld4_q(((b.t0 + i) * p.hq + b.h) * p.dh + d4 * 4u) * p.scale;
}

fn prefill_stage_k(tid: u32, k0: u32, b: QBlock) {
    stage(0u, tid, k0, b);
}

fn prefill_stage_v(tid: u32, k0: u32, b: QBlock) {
    stage(1u, tid, k0, b);
}

fn prefill_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>) {
    let orow = ((b.t0 + i) * p.hq + b.h) * p.dh;
    st2_o(orow + d4 * 4u, o.x, o.y);
    st2_o(orow + d4 * 4u + 2u, o.z, o.w);
}

// Nothing between staging Q and the key loop (q arrives normed and rotated).
fn prefill_prepare(tid: u32, b: QBlock) {}

@compute @workgroup_size(NT)
fn attention_prefill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) tid: u32
#ifdef_sg
                     , @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
                     @builtin(subgroup_id) sgid: u32
#endif_sg
                     ) {
#ifdef_sg
    prefill(wid, nwg, tid, sgid * sgs + sgi);
#else_sg
    prefill(wid, nwg, tid, tid);
#endif_sg
}
