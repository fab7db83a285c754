// gated_attention_decode (T == 1): one workgroup of NT threads per query head. The query, the new
// key and the new value are normalised / rotated into workgroup memory (q_s, dk_s, dv_s); the key
// loop is decode_attend (attention_decode_loop.wgsl) over the cached keys 0..n_past and the new
// key n_past, which decode_score / decode_value read from workgroup memory.

var<workgroup> dk_s: array<vec4<f32>, DH4>;
var<workgroup> dv_s: array<vec4<f32>, DH4>;
var<workgroup> dss_s: array<vec2<f32>, NT>;

fn ld4_key(i: u32) -> vec4<f32> {
    return ld4_kc(i);
}

fn decode_score(key: u32, kbase: u32) -> f32 {
    if (key == p.n_past) {
        var dot = vec4<f32>(0.0);
        for (var d4 = 0u; d4 < DH4; d4++) {
            dot += q_s[d4] * dk_s[d4];
        }
        return dot.x + dot.y + dot.z + dot.w;
    }
    return key_dot(key * (p.hkv * p.dh) + kbase);
}

fn decode_value(key: u32, kbase: u32, c4: u32) -> vec4<f32> {
    if (key == p.n_past) {
        return dv_s[c4];
    }
    return ld4_vc(key * (p.hkv * p.dh) + kbase + c4 * 4u);
}

@compute @workgroup_size(NT)
fn gated_attention_decode(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                          @builtin(local_invocation_index) tid: u32) {
    let h = group_index(wid, nwg);
    if (h >= p.hq) {
        return;
    }
    let kvh = h / p.group;
    let pos = p.n_past;
    let qrow = h * 2u * p.dh;
    let krow = kvh * p.dh;
    let crow = (pos * p.hkv + kvh) * p.dh;
    let writer = h % p.group == 0u;
    let rot = 2u * p.half;

    // 1. mean squares of the raw query and key rows
    var ss = vec2<f32>(0.0);
    for (var d = tid; d < p.dh; d += NT) {
        let a = ld_qg(qrow + d);
        let b = ld_k(krow + d);
        ss += vec2<f32>(a * a, b * b);
    }
    dss_s[tid] = ss;
    workgroupBarrier();
    for (var w = NT / 2u; w > 0u; w >>= 1u) {
        if (tid < w) {
            dss_s[tid] += dss_s[tid + w];
        }
        workgroupBarrier();
    }
    let iq = 1.0 / sqrt(dss_s[0].x / f32(p.dh) + p.eps);
    let ik = 1.0 / sqrt(dss_s[0].y / f32(p.dh) + p.eps);

    // 2. norm and RoPE: item e < half rotates the pair (e, e + half); the rest pass dims R.. through
    for (var e = tid; e < p.half + p.dh - rot; e += NT) {
        if (e < p.half) {
            let i0 = e;
            let i1 = e + p.half;
            let c = ld_cos(pos * p.half + e);
            let s = ld_sin(pos * p.half + e);
            let qa = ld_qg(qrow + i0) * iq * (1.0 + ld_qn(i0));
            let qb = ld_qg(qrow + i1) * iq * (1.0 + ld_qn(i1));
            q_s[i0 / 4u][i0 % 4u] = (qa * c - qb * s) * p.scale;
            q_s[i1 / 4u][i1 % 4u] = (qb * c + qa * s) * p.scale;
            let ka = ld_k(krow + i0) * ik * (1.0 + ld_kn(i0));
            let kb = ld_k(krow + i1) * ik * (1.0 + ld_kn(i1));
            let k0 = rnd_kc(ka * c - kb * s);
            let k1 = rnd_kc(kb * c + ka * s);
            dk_s[i0 / 4u][i0 % 4u] = k0;
            dk_s[i1 / 4u][i1 % 4u] = k1;
            if (writer) {
                st_kc(crow + i0, k0);
                st_kc(crow + i1, k1);
            }
        } else {
            let d = rot + e - p.half;
            q_s[d / 4u][d % 4u] = ld_qg(qrow + d) * iq * (1.0 + ld_qn(d)) * p.scale;
            let k0 = rnd_kc(ld_k(krow + d) * ik * (1.0 + ld_kn(d)));
            dk_s[d / 4u][d % 4u] = k0;
            if (writer) {
                st_kc(crow + d, k0);
            }
        }
    }
    for (var d = tid; d < p.dh; d += NT) {
        let vv = rnd_vc(ld_v(krow + d));
        dv_s[d / 4u][d % 4u] = vv;
        if (writer) {
            st_vc(crow + d, vv);
        }
    }
    workgroupBarrier();

    // 3. attention over keys 0..=n_past (key n_past is the new one, in dk_s / dv_s)
    var o = decode_attend(tid, p.n_past + 1u, krow);

    // 4. gate, store in o's dtype
    if (tid < DH4) {
        let d = tid * 4u;
        let gate = vec4<f32>(ld_qg(qrow + p.dh + d), ld_qg(qrow + p.dh + d + 1u), ld_qg(qrow + p.dh + d + 2u), ld_qg(qrow + p.dh + d + 3u));
        o = o / (1.0 + exp(-gate));
        st2_o(h * p.dh + d, o.x, o.y);
        st2_o(h * p.dh + d + 2u, o.z, o.w);
    }
}
