// The sum over a workgroup of one f32 an invocation: a tree in workgroup memory with halving
// strides, so the order of the additions depends on WG alone (a row's sum is the same bits in every
// kernel that takes it this way, whatever else the dispatch holds). WG is a power of two; every
// invocation of the workgroup calls wg_sum (it has barriers) and all get the same result. Used by
// the RMS norms (before wg_sum.wgsl) and paged_gated_attention_kv.

var<workgroup> wg_red: array<f32, WG>;

// The sum over the workgroup of each invocation's v.
fn wg_sum(v: f32, lid: u32) -> f32 {
    wg_red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            wg_red[lid] += wg_red[lid + s];
        }
        workgroupBarrier();
    }
    return wg_red[0];
}
