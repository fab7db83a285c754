// gated_attention_decode (T == 1): one workgroup of NTD threads per query head. The query, the new key
// and the new value are normalised / rotated into workgroup memory (key n_past is read from there),
// cached keys 0..n_past are walked in chunks of NTD as in attention_decode.wgsl.
const RD = NTD / DH4;    // key subsets in the P.V phase
const NG = 16u;          // reduction groups
const GS = NTD / NG;

var<workgroup> dq_s: array<vec4<f32>, DH4>;
var<workgroup> dk_s: array<vec4<f32>, DH4>;
var<workgroup> dv_s: array<vec4<f32>, DH4>;
var<workgroup> dsc_s: array<f32, NTD>;
var<workgroup> dred_s: array<f32, NG>;
var<workgroup> dacc_s: array<vec4<f32>, NTD>;
var<workgroup> dss_s: array<vec2<f32>, NTD>;

@compute @workgroup_size(NTD)
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
    for (var d = tid; d < p.dh; d += NTD) {
        let a = ld_qg(qrow + d);
        let b = ld_k(krow + d);
        ss += vec2<f32>(a * a, b * b);
    }
    dss_s[tid] = ss;
    workgroupBarrier();
    for (var w = NTD / 2u; w > 0u; w >>= 1u) {
        if (tid < w) {
            dss_s[tid] += dss_s[tid + w];
        }
        workgroupBarrier();
    }
    let iq = 1.0 / sqrt(dss_s[0].x / f32(p.dh) + p.eps);
    let ik = 1.0 / sqrt(dss_s[0].y / f32(p.dh) + p.eps);

    // 2. norm and RoPE: item e < half rotates the pair (e, e + half); the rest pass dims R.. through
    for (var e = tid; e < p.half + p.dh - rot; e += NTD) {
        if (e < p.half) {
            let i0 = e;
            let i1 = e + p.half;
            let c = ld_cos(pos * p.half + e);
            let s = ld_sin(pos * p.half + e);
            let qa = ld_qg(qrow + i0) * iq * (1.0 + ld_qn(i0));
            let qb = ld_qg(qrow + i1) * iq * (1.0 + ld_qn(i1));
            dq_s[i0 / 4u][i0 % 4u] = (qa * c - qb * s) * p.scale;
            dq_s[i1 / 4u][i1 % 4u] = (qb * c + qa * s) * p.scale;
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
            dq_s[d / 4u][d % 4u] = ld_qg(qrow + d) * iq * (1.0 + ld_qn(d)) * p.scale;
            let k0 = rnd_kc(ld_k(krow + d) * ik * (1.0 + ld_kn(d)));
            dk_s[d / 4u][d % 4u] = k0;
            if (writer) {
                st_kc(crow + d, k0);
            }
        }
    }
    for (var d = tid; d < p.dh; d += NTD) {
        let vv = rnd_vc(ld_v(krow + d));
        dv_s[d / 4u][d % 4u] = vv;
        if (writer) {
            st_vc(crow + d, vv);
        }
    }
    workgroupBarrier();

    // 3. attention over keys 0..=n_past (key n_past is the new one, in dk_s / dv_s)
    let kv_len = p.n_past + 1u;
    let kstride = p.hkv * p.dh;
    let r = tid / DH4;
    let c4 = tid % DH4;
    var m = NEG;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    let nchunks = (kv_len + NTD - 1u) / NTD;
    for (var c = 0u; c < nchunks; c++) {
        let c0 = c * NTD;
        let cnt = min(NTD, kv_len - c0);
        var s = NEG;
        if (tid < cnt) {
            let key = c0 + tid;
            var dot = vec4<f32>(0.0);
            if (key == p.n_past) {
                for (var d4 = 0u; d4 < DH4; d4++) {
                    dot += dq_s[d4] * dk_s[d4];
                }
            } else {
                let kb = key * kstride + krow;
                for (var d4 = 0u; d4 < DH4; d4++) {
                    dot += dq_s[d4] * ld4_kc(kb + d4 * 4u);
                }
            }
            s = dot.x + dot.y + dot.z + dot.w;
        }
        dsc_s[tid] = s;
        workgroupBarrier();
        if (tid < NG) {
            var mx = NEG;
            for (var j = tid * GS; j < tid * GS + GS; j++) {
                mx = max(mx, dsc_s[j]);
            }
            dred_s[tid] = mx;
        }
        workgroupBarrier();
        var cmax = NEG;
        for (var g = 0u; g < NG; g++) {
            cmax = max(cmax, dred_s[g]);
        }
        let m_new = max(m, cmax);
        let alpha = exp(m - m_new);
        m = m_new;
        let pj = select(0.0, exp(s - m_new), tid < cnt);
        l = l * alpha + pj;
        acc *= alpha;
        dsc_s[tid] = pj;
        workgroupBarrier();
        if (r < RD) {
            for (var j = r; j < cnt; j += RD) {
                var vv: vec4<f32>;
                if (c0 + j == p.n_past) {
                    vv = dv_s[c4];
                } else {
                    vv = ld4_vc((c0 + j) * kstride + krow + c4 * 4u);
                }
                acc += dsc_s[j] * vv;
            }
        }
        workgroupBarrier();
    }
    dsc_s[tid] = l;
    dacc_s[tid] = acc;
    workgroupBarrier();
    if (tid < NG) {
        var sum = 0.0;
        for (var j = tid * GS; j < tid * GS + GS; j++) {
            sum += dsc_s[j];
        }
        dred_s[tid] = sum;
    }
    workgroupBarrier();

    // 4. normalise, gate, store in o's dtype
    if (tid < DH4) {
        var z = 0.0;
        for (var g = 0u; g < NG; g++) {
            z += dred_s[g];
        }
        var o = vec4<f32>(0.0);
        for (var rr = 0u; rr < RD; rr++) {
            o += dacc_s[rr * DH4 + tid];
        }
        let d = tid * 4u;
        let gate = vec4<f32>(ld_qg(qrow + p.dh + d), ld_qg(qrow + p.dh + d + 1u), ld_qg(qrow + p.dh + d + 2u), ld_qg(qrow + p.dh + d + 3u));
        o = o / z / (1.0 + exp(-gate));
        st2_o(h * p.dh + d, o.x, o.y);
        st2_o(h * p.dh + d + 2u, o.z, o.w);
    }
}
