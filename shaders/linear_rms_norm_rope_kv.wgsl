// linear_rms_norm_rope_kv's tail (linear/rope_kv_after.rs): rms_norm_rope_kv.wgsl follows this
// file, its x the stacked q/k/v projection's output [T, N], here the sum of the split-K
// tensor-core linear's partials ([S, T, N], bound as part) in split order s = 0, 1, ..., as
// linear_splitk.wgsl adds them (the same bits). N = (Hq + 2 Hkv) Dh, from rms_norm_rope_kv's
// Params.

fn partial(s: u32, i: u32) -> f32 {
    return ld_part(s * p.t * (p.hq + 2u * p.hkv) * p.d + i);
}

// x: the S partials loaded together, then added in order (straight-line code from linear/mod.rs
// `split_sum`: in a loop each load waited on the sum before it)
fn ld_x(i: u32) -> f32 {
    //@sum
}
