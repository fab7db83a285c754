// paged_attention_lone_rope.wgsl's rows for paged_gated_attention (Qwen3.5's gated attention, a
// lone decode step): the query half of qg [1, Hq, 2 Dh] normed by x̂ (1 + qn), the key k
// [1, Hkv, Dh] by x̂ (1 + kn), the value v as given; the position is the sequence's kv_len - 1
// (seqs, read by paged_attention_lone.wgsl's step 1) and the pool row its block table's; each
// output is times sigmoid(gate), the second half of qg, loaded with step 1's loads.
// Bindings qg, k, v, qn, kn, cos, sin (read), kp, vp (read and written as words).

var<workgroup> gate_s: array<vec4<f32>, G * DH4>;

fn ld4_e(buf: u32, i: u32) -> vec4<f32> {
    switch (buf) {
        case 0u: {
            return vec4<f32>(ld_qg(i), ld_qg(i + 1u), ld_qg(i + 2u), ld_qg(i + 3u));
        }
        case 1u: {
            return vec4<f32>(ld_k(i), ld_k(i + 1u), ld_k(i + 2u), ld_k(i + 3u));
        }
        default: {
            return vec4<f32>(ld_v(i), ld_v(i + 1u), ld_v(i + 2u), ld_v(i + 3u));
        }
    }
}

fn raw4(hr: u32, g: u32, c4: u32) -> vec4<f32> {
    if (hr < G) {
        return ld4_e(0u, (g * G + hr) * 2u * p.dh + c4 * 4u);
    }
    return ld4_e(hr - G + 1u, g * p.dh + c4 * 4u);
}

fn w4(hr: u32, g: u32, c4: u32) -> vec4<f32> {
    let e = c4 * 4u;
    if (hr < G) {
        return 1.0 + vec4<f32>(ld_qn(e), ld_qn(e + 1u), ld_qn(e + 2u), ld_qn(e + 3u));
    }
    return 1.0 + vec4<f32>(ld_kn(e), ld_kn(e + 1u), ld_kn(e + 2u), ld_kn(e + 3u));
}

fn front_more(tid: u32, g: u32) {
    for (var i = tid; i < G * DH4; i += NT) {
        gate_s[i] = ld4_e(0u, (g * G + i / DH4) * 2u * p.dh + p.dh + (i % DH4) * 4u);
    }
}

// A description that does not hold together: no position, no row written.
fn pos_slot() -> vec2<u32> {
    let sq = workgroupUniformLoad(&seq_w);
    if (!lone_ok(sq)) {
        return vec2<u32>(0u, NO_ROW);
    }
    let pos = sq.z - 1u;
    return vec2<u32>(pos, pool_row(pos));
}

fn gate_out(hh: u32, c4: u32, o: vec4<f32>) -> vec4<f32> {
    return o / (1.0 + exp(-gate_s[hh * DH4 + c4]));
}
