// The x of the vec4 matvec lanes (q4_k_v4.wgsl, q8_0_v4.wgsl) as given: f32 read 16 bytes at a
// time (the binding `x_v4`).

// x elements e .. e + 3 (relative to the binding offset), times UNLANES.
fn xv(e: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(x_v4[(p.offs[0].x + e) >> 2u]) * UNLANES;
}
