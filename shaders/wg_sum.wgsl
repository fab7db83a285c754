// Workgroup sum of one f32 per invocation, used by rms_norm, add_rms_norm, rms_norm_rope and
// rms_norm_gated for their sums of squares (rms_norm.rs, rms_norm_rope.rs and rms_norm_gated.rs
// prepend it). A tree in workgroup memory with halving strides: the order of the additions depends
// on WG alone, so a row's norm is the same bits whichever kernel computes it. WG is a power of
// two; every invocation of the workgroup calls it (it has barriers) and all get the same sum.

var<workgroup> wg_red: array<f32, WG>;

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
