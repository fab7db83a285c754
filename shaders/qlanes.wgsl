// The scalar-word matvec lane (qmatvec.wgsl's `slot`) over the type file's `lane_x` / `lane_dot`:
// x of any float dtype read element by element. The vec4 path for f32 x has its own `slot` in
// the type's _v4 file (q4_k_v4.wgsl, q8_0_v4.wgsl).

// x4s(e), x elements e .. e + 3 times UNLANES: qx_words.wgsl (x of any float dtype as given) or
// qx_norm.wgsl (the rows of a residual add + RMSNorm).

const SLOTS = LW;

// The x vectors of lane slot w (NX of them; the rest 0) for the x row at element xr.
struct X {
    a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>,
}

fn xload(w: u32, xr: u32) -> X {
    let b = w / LW;
    let j = w % LW;
    var x = X(x4s(xr + lane_x(b, j, 0u)), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    if (NX > 1u) {
        x.b = x4s(xr + lane_x(b, j, 1u));
    }
    if (NX > 2u) {
        x.c = x4s(xr + lane_x(b, j, 2u));
        x.d = x4s(xr + lane_x(b, j, 3u));
    }
    return x;
}

// The dot product of lane slot w with the row at byte rb.
fn slot_dot(rb: u32, w: u32, x: X) -> f32 {
    return lane_dot(rb, w / LW, w % LW, x.a, x.b, x.c, x.d);
}
