// The x of qlanes.wgsl (the scalar-word matvec lanes) as given: any float dtype, element by
// element or by words where 16-bit rows start on one (X_ALIGNED).

// x elements e .. e + 3 of the row-major x (e relative to its binding offset), times UNLANES.
fn x4s(e: u32) -> vec4<f32> {
    let a = p.offs[0].x + e;
    if (X_KIND == 0u) {
        return bitcast<vec4<f32>>(vec4<u32>(x_buf[a], x_buf[a + 1u], x_buf[a + 2u], x_buf[a + 3u])) * UNLANES;
    }
    if (!X_ALIGNED) {
        return vec4<f32>(ld_x(e), ld_x(e + 1u), ld_x(e + 2u), ld_x(e + 3u)) * UNLANES;
    }
    let w0 = x_buf[a >> 1u];
    let w1 = x_buf[(a >> 1u) + 1u];
    if (X_KIND == 1u) {
        return vec4<f32>(unpack2x16float(w0), unpack2x16float(w1)) * UNLANES;
    }
    return bitcast<vec4<f32>>(vec4<u32>(w0 << 16u, w0 & 0xffff0000u, w1 << 16u, w1 & 0xffff0000u)) * UNLANES;
}
