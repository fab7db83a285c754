// linear_add_rms_norm's second pass (linear/norm_after.rs): add_rms_norm.wgsl follows this file,
// its b the projection's output y, here the sum of the split-K tensor-core linear's partials
// ([S, M, N], bound as x) in split order s = 0, 1, ..., as linear_splitk.wgsl adds them (the same
// bits); `keep_b` stores it into y (bound as lin) after the row's loads.
// The rows' Params are add_rms_norm's: rows = M, d = N.

fn partial(s: u32, i: u32) -> f32 {
    return ld_x(s * p.rows * p.d + i);
}

// b: the S partials loaded together, then added in order (straight-line code from linear/mod.rs
// `split_sum`: in a loop each load waited on the sum before it)
fn ld_b(i: u32) -> f32 {
    //@sum
}

fn keep_b(i: u32, v: f32) {
    st_lin(i, v);
}
