// paged_attention_lone_rope.wgsl's rows for rms_norm_rope_kv_attention: the stacked projection
// x [1, Hq + 2 Hkv, Dh] (as rms_norm_rope_row.wgsl), the norm weight w of a row a head or one for
// all (Params.wstride Dh or 0), the position pos[0] and the pool row slots[0] as given.
// Bindings x, w, pos, cos, sin, slots (read), kp, vp (read and written as words).

var<workgroup> ps_w: vec2<u32>;   // pos[0], slots[0]

// The x head of raw_s row hr.
fn x_head(hr: u32, g: u32) -> u32 {
    if (hr < G) {
        return g * G + hr;
    }
    if (hr == G) {
        return p.hq + g;
    }
    return p.hq + p.hkv + g;
}

fn raw4(hr: u32, g: u32, c4: u32) -> vec4<f32> {
    let i = x_head(hr, g) * p.dh + c4 * 4u;
    return vec4<f32>(ld_x(i), ld_x(i + 1u), ld_x(i + 2u), ld_x(i + 3u));
}

fn w4(hr: u32, g: u32, c4: u32) -> vec4<f32> {
    let i = x_head(hr, g) * p.wstride + c4 * 4u;
    return vec4<f32>(ld_w(i), ld_w(i + 1u), ld_w(i + 2u), ld_w(i + 3u));
}

fn front_more(tid: u32, g: u32) {
    if (tid == 0u) {
        ps_w = vec2<u32>(ld_pos(0u), ld_slots(0u));
    }
}

fn pos_slot() -> vec2<u32> {
    return workgroupUniformLoad(&ps_w);
}

fn gate_out(hh: u32, c4: u32, o: vec4<f32>) -> vec4<f32> {
    return o;
}
