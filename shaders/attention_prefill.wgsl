// Prefill attention: the key-block loop is prefill_attend (attention_prefill_loop.wgsl); this
// kernel gives the scaled query, stages key and value rows from k / v (vec4 loads, prefetched into
// registers) and stores the output.
// Params and bindings: attention.wgsl. Constants: attention_prefill_loop.wgsl's.

// Key and value rows reach kv_s through registers pf{r} (attention_prefill.rs generates them:
// this thread's elements tid + r NT of the BK x DH4 block), loaded one phase before they are
// stored, so their global latency hides behind the score (values) or P.V (next keys) phase:
//   prefill_prepare: keys of block 0 -> pf;  stage_k: pf -> kv_s, values of the block -> pf;
//   stage_v: pf -> kv_s, keys of the next block -> pf.
//@pf_decl

// Element e of the BK x DH4 block at key k0 of k (which == 0u) or v (the head file's kv_vec: a
// contiguous cache or a paged pool); zeros at or past kv_end (also the block after the last,
// which stage_v fetches and nobody stores).
fn block_elem(which: u32, k0: u32, e: u32, b: QBlock) -> vec4<f32> {
    let j = e / DH4;
    var x = vec4<f32>(0.0);
    if (k0 + j < b.kv_end) {
        x = kv_vec(which, k0 + j, b.kbase + (e % DH4) * 4u);
    }
    return x;
}

fn load_block(which: u32, tid: u32, k0: u32, b: QBlock) {
    kv_block(k0, b.kv_end);
    //@pf_load
}

fn store_block(tid: u32) {
    //@pf_store
}

// The scaled query.
fn prefill_q(b: QBlock, i: u32, d4: u32) -> vec4<f32> {
    return ld4_q(((b.t0 + i) * p.hq + b.h) * p.dh + d4 * 4u) * p.scale;
}

fn prefill_stage_k(tid: u32, k0: u32, b: QBlock) {
    store_block(tid);
    load_block(1u, tid, k0, b);
}

fn prefill_stage_v(tid: u32, k0: u32, b: QBlock) {
    store_block(tid);
    load_block(0u, tid, k0 + BK, b);
}

fn prefill_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>) {
    let orow = ((b.t0 + i) * p.hq + b.h) * p.dh;
    st2_o(orow + d4 * 4u, o.x, o.y);
    st2_o(orow + d4 * 4u + 2u, o.z, o.w);
}

// The first key block on its way (q arrives normed and rotated).
fn prefill_prepare(tid: u32, b: QBlock) {
    load_block(0u, tid, b.k_lo, b);
}

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
