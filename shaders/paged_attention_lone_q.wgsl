// paged_attention_lone.wgsl's prologue for paged_attention: the query as given, scaled. Bindings
// q, kp, vp (read).

var<private> new_row: u32 = NO_NEW;

fn front(tid: u32, g: u32) {
    for (var i = tid; i < G * DH4; i += NT) {
        q_s[i] = ld4_q(g * G * p.dh + i * 4u) * p.scale;
    }
}

fn finish(tid: u32, g: u32, part: u32) {}

fn gate_out(hh: u32, c4: u32, o: vec4<f32>) -> vec4<f32> {
    return o;
}
