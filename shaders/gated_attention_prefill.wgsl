// gated_attention_prefill (T > 1): one workgroup of NTP threads per (block of BQ queries, query head h),
// flash-attention style as attention_prefill.wgsl (tiles, online softmax, P.V in registers), with:
//   - the Q tile normalised and rotated in workgroup memory, one thread per row;
//   - key blocks staged from the cache below n_past and from k (normalised, rotated, rounded to the
//     cache dtype, one thread per row) at and past it; values likewise from the cache or v;
//   - the first head of each kv group writing its own query block's new k / v rows to the cache;
//   - the output multiplied by sigmoid(gate) and stored in o's dtype.
// Rows and columns of the tiles are padded by one (vec4 / f32) against bank conflicts.

const QS = DH4 + 1u;            // padded row stride (vec4) of q_s and kv_s
const SS = BK + 1u;             // padded row stride of s_s
const CT = BK / TN;             // threads across keys in the score tile
const RT = BQ / TM;             // threads across queries in the score tile
const TPR = NTP / BQ;           // threads per query row in the P.V phase
const NV = (DH4 + TPR - 1u) / TPR;  // output vec4s per thread

var<workgroup> q_s: array<vec4<f32>, BQ * QS>;
var<workgroup> kv_s: array<vec4<f32>, BK * QS>;
var<workgroup> s_s: array<f32, BQ * SS>;
var<workgroup> m_s: array<f32, BQ>;
var<workgroup> l_s: array<f32, BQ>;
var<workgroup> a_s: array<f32, BQ>;

fn qel(i: u32, d: u32) -> f32 {
    return q_s[i * QS + d / 4u][d % 4u];
}
fn kel(j: u32, d: u32) -> f32 {
    return kv_s[j * QS + d / 4u][d % 4u];
}

// Query row i of the tile at position pos: rms_norm (1 + qn), RoPE, times the attention scale.
fn prep_q(i: u32, pos: u32) {
    var ss = 0.0;
    for (var d4 = 0u; d4 < DH4; d4++) {
        ss += dot(q_s[i * QS + d4], q_s[i * QS + d4]);
    }
    let inv = 1.0 / sqrt(ss / f32(p.dh) + p.eps);
    for (var e = 0u; e < p.half; e++) {
        let i1 = e + p.half;
        let c = ld_cos(pos * p.half + e);
        let s = ld_sin(pos * p.half + e);
        let a = qel(i, e) * inv * (1.0 + ld_qn(e));
        let b = qel(i, i1) * inv * (1.0 + ld_qn(i1));
        q_s[i * QS + e / 4u][e % 4u] = (a * c - b * s) * p.scale;
        q_s[i * QS + i1 / 4u][i1 % 4u] = (b * c + a * s) * p.scale;
    }
    for (var d = 2u * p.half; d < p.dh; d++) {
        q_s[i * QS + d / 4u][d % 4u] = qel(i, d) * inv * (1.0 + ld_qn(d)) * p.scale;
    }
}

// Key row j of kv_s (a new key at position pos): rms_norm (1 + kn), RoPE, rounded to the cache's
// dtype; written to the cache row crow when `write`.
fn prep_k(j: u32, pos: u32, write: bool, crow: u32) {
    var ss = 0.0;
    for (var d4 = 0u; d4 < DH4; d4++) {
        ss += dot(kv_s[j * QS + d4], kv_s[j * QS + d4]);
    }
    let inv = 1.0 / sqrt(ss / f32(p.dh) + p.eps);
    for (var e = 0u; e < p.half; e++) {
        let i1 = e + p.half;
        let c = ld_cos(pos * p.half + e);
        let s = ld_sin(pos * p.half + e);
        let a = kel(j, e) * inv * (1.0 + ld_kn(e));
        let b = kel(j, i1) * inv * (1.0 + ld_kn(i1));
        kv_s[j * QS + e / 4u][e % 4u] = rnd_kc(a * c - b * s);
        kv_s[j * QS + i1 / 4u][i1 % 4u] = rnd_kc(b * c + a * s);
    }
    for (var d = 2u * p.half; d < p.dh; d++) {
        kv_s[j * QS + d / 4u][d % 4u] = rnd_kc(kel(j, d) * inv * (1.0 + ld_kn(d)));
    }
    if (write) {
        for (var d = 0u; d < p.dh; d++) {
            st_kc(crow + d, kel(j, d));
        }
    }
}

@compute @workgroup_size(NTP)
fn gated_attention_prefill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.nqb * p.hq) {
        return;
    }
    let qb = p.nqb - 1u - idx / p.hq;   // the longest (last) query blocks start first
    let h = idx % p.hq;
    let kvh = h / p.group;
    let kbase = kvh * p.dh;
    let kstride = p.hkv * p.dh;
    let t0 = qb * BQ;
    let tn = min(BQ, p.t - t0);         // valid query rows in this block
    let pos0 = p.n_past + t0;           // position of row 0
    let kv_end = pos0 + tn;             // keys 0..kv_end are read
    let writer = h % p.group == 0u;

    for (var e = tid; e < BQ * DH4; e += NTP) {
        let i = e / DH4;
        let d = (e % DH4) * 4u;
        var x = vec4<f32>(0.0);
        if (i < tn) {
            let b = ((t0 + i) * p.hq + h) * 2u * p.dh + d;
            x = vec4<f32>(ld_qg(b), ld_qg(b + 1u), ld_qg(b + 2u), ld_qg(b + 3u));
        }
        q_s[i * QS + e % DH4] = x;
    }
    if (tid < BQ) {
        m_s[tid] = NEG;
        l_s[tid] = 0.0;
    }
    workgroupBarrier();
    if (tid < tn) {
        prep_q(tid, pos0 + tid);
    }

    let ti = tid / CT;
    let tj = tid % CT;
    let pr = tid / TPR;
    let pl = tid % TPR;
    var acc: array<vec4<f32>, NV>;
    let nkb = (kv_end + BK - 1u) / BK;
    for (var kb = 0u; kb < nkb; kb++) {
        let k0 = kb * BK;
        // 1. stage K: cached rows, raw new rows (transformed below), zeros past kv_end
        for (var e = tid; e < BK * DH4; e += NTP) {
            let key = k0 + e / DH4;
            let d = (e % DH4) * 4u;
            var x = vec4<f32>(0.0);
            if (key < p.n_past) {
                x = ld4_kc(key * kstride + kbase + d);
            } else if (key < kv_end) {
                let b = (key - p.n_past) * kstride + kbase + d;
                x = vec4<f32>(ld_k(b), ld_k(b + 1u), ld_k(b + 2u), ld_k(b + 3u));
            }
            kv_s[(e / DH4) * QS + e % DH4] = x;
        }
        workgroupBarrier();
        if (tid < BK) {
            let key = k0 + tid;
            if (key >= p.n_past && key < kv_end) {
                let tok = key - p.n_past;
                let own = writer && tok >= t0 && tok < t0 + tn;
                prep_k(tid, key, own, key * kstride + kbase);
            }
        }
        workgroupBarrier();

        // 2. S = Q K^T, causal mask
        var sc: array<f32, TM * TN>;
        for (var d4 = 0u; d4 < DH4; d4++) {
            var kx: array<vec4<f32>, TN>;
            for (var b = 0u; b < TN; b++) {
                kx[b] = kv_s[(tj + b * CT) * QS + d4];
            }
            for (var a = 0u; a < TM; a++) {
                let qx = q_s[(ti + a * RT) * QS + d4];
                for (var b = 0u; b < TN; b++) {
                    sc[a * TN + b] += dot(qx, kx[b]);
                }
            }
        }
        for (var a = 0u; a < TM; a++) {
            let i = ti + a * RT;
            for (var b = 0u; b < TN; b++) {
                let j = tj + b * CT;
                let key = k0 + j;
                var s = sc[a * TN + b];
                if (key >= kv_end || key > pos0 + i) {
                    s = NEG;
                }
                s_s[i * SS + j] = s;
            }
        }
        workgroupBarrier();

        // 3. online softmax (one thread per query row) while every thread stages V
        if (tid < BQ) {
            let m_old = m_s[tid];
            var mx = m_old;
            for (var j = 0u; j < BK; j++) {
                mx = max(mx, s_s[tid * SS + j]);
            }
            var sum = 0.0;
            for (var j = 0u; j < BK; j++) {
                let e = exp(s_s[tid * SS + j] - mx);
                s_s[tid * SS + j] = e;
                sum += e;
            }
            let alpha = exp(m_old - mx);
            m_s[tid] = mx;
            l_s[tid] = l_s[tid] * alpha + sum;
            a_s[tid] = alpha;
        }
        for (var e = tid; e < BK * DH4; e += NTP) {
            let key = k0 + e / DH4;
            let d = (e % DH4) * 4u;
            var x = vec4<f32>(0.0);
            if (key < p.n_past) {
                x = ld4_vc(key * kstride + kbase + d);
            } else if (key < kv_end) {
                let tok = key - p.n_past;
                let b = tok * kstride + kbase + d;
                x = vec4<f32>(rnd_vc(ld_v(b)), rnd_vc(ld_v(b + 1u)), rnd_vc(ld_v(b + 2u)), rnd_vc(ld_v(b + 3u)));
                if (writer && tok >= t0 && tok < t0 + tn) {
                    let c = key * kstride + kbase + d;
                    st_vc(c, x.x);
                    st_vc(c + 1u, x.y);
                    st_vc(c + 2u, x.z);
                    st_vc(c + 3u, x.w);
                }
            }
            kv_s[(e / DH4) * QS + e % DH4] = x;
        }
        workgroupBarrier();

        // 4. O = O * alpha + P V
        let alpha = a_s[pr];
        for (var k = 0u; k < NV; k++) {
            acc[k] *= alpha;
        }
        for (var j = 0u; j < BK; j++) {
            let pj = s_s[pr * SS + j];
            for (var k = 0u; k < NV; k++) {
                let d4 = pl + k * TPR;
                if (d4 < DH4) {
                    acc[k] += pj * kv_s[j * QS + d4];
                }
            }
        }
        workgroupBarrier();
    }

    // 5. normalise, gate, store in o's dtype
    if (pr < tn) {
        let inv = 1.0 / l_s[pr];
        let orow = ((t0 + pr) * p.hq + h) * p.dh;
        let grow = ((t0 + pr) * p.hq + h) * 2u * p.dh + p.dh;
        for (var k = 0u; k < NV; k++) {
            let d4 = pl + k * TPR;
            if (d4 < DH4) {
                let d = d4 * 4u;
                let gate = vec4<f32>(ld_qg(grow + d), ld_qg(grow + d + 1u), ld_qg(grow + d + 2u), ld_qg(grow + d + 3u));
                let o = acc[k] * inv / (1.0 + exp(-gate));
                st2_o(orow + d, o.x, o.y);
                st2_o(orow + d + 2u, o.z, o.w);
            }
        }
    }
}
