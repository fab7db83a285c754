// Prefill attention (flash-attention style, f32 math): one workgroup per (block of BQ queries,
// query head h). Query t sits at position n_past + t and sees keys 0..=n_past + t; query head h
// reads kv head h / group.
//
// The scaled Q tile stays in workgroup memory. Key blocks of BK rows are walked up to the last
// key the block's last valid query sees (kv_end); per block:
//   1. stage K (rows >= kv_end are zeros: the cache past n_past + T is never read)
//   2. S = Q K^T: thread (ti, tj) computes a TM x TN micro-tile; causal mask -> NEG
//   3. online softmax, one thread per query row (running max m_s, sum l_s, rescale a_s);
//      meanwhile every thread stages V into the same buffer K used
//   4. O = O * alpha + P V: thread (pr, pl) owns row pr and vec4 columns pl + k * TPR (registers)
// Rows and columns of the tiles are padded by one (vec4 / f32) against bank conflicts.
// Bindings: q, k, v (read), o (write).
// Constants: DH4 (head_dim / 4), BQ, BK, TM, TN, NT = (BQ / TM) * (BK / TN).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,
    group: u32,
    scale: f32,
    nqb: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

const NEG = -1.0e30;            // masked score; exp(NEG - m) == 0 for any real m
const QS = DH4 + 1u;            // padded row stride (vec4) of q_s and kv_s
const SS = BK + 1u;             // padded row stride of s_s
const CT = BK / TN;             // threads across keys in the score tile
const RT = BQ / TM;             // threads across queries in the score tile
const TPR = NT / BQ;            // threads per query row in the P.V phase
const NV = (DH4 + TPR - 1u) / TPR;  // output vec4s per thread

var<workgroup> q_s: array<vec4<f32>, BQ * QS>;
var<workgroup> kv_s: array<vec4<f32>, BK * QS>;
var<workgroup> s_s: array<f32, BQ * SS>;
var<workgroup> m_s: array<f32, BQ>;
var<workgroup> l_s: array<f32, BQ>;
var<workgroup> a_s: array<f32, BQ>;

// Rows k0 .. k0 + BK of k (which == 0u) or v into kv_s; rows at or past kv_end are zeros.
fn stage(which: u32, tid: u32, k0: u32, kv_end: u32, kstride: u32, kbase: u32) {
    for (var e = tid; e < BK * DH4; e += NT) {
        let j = e / DH4;
        let d4 = e % DH4;
        var x = vec4<f32>(0.0);
        if (k0 + j < kv_end) {
            let i = (k0 + j) * kstride + kbase + d4 * 4u;
            if (which == 0u) {
                x = ld4_k(i);
            } else {
                x = ld4_v(i);
            }
        }
        kv_s[j * QS + d4] = x;
    }
}

@compute @workgroup_size(NT)
fn attention_prefill(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.nqb * p.hq) {
        return;
    }
    let qb = p.nqb - 1u - idx / p.hq;   // the longest (last) query blocks start first
    let h = idx % p.hq;
    let kbase = (h / p.group) * p.dh;
    let kstride = p.hkv * p.dh;
    let t0 = qb * BQ;
    let tn = min(BQ, p.t - t0);         // valid query rows in this block
    let pos0 = p.n_past + t0;           // position of row 0
    let kv_end = pos0 + tn;             // keys 0..kv_end are read

    for (var e = tid; e < BQ * DH4; e += NT) {
        let i = e / DH4;
        let d4 = e % DH4;
        var x = vec4<f32>(0.0);
        if (i < tn) {
            x = ld4_q(((t0 + i) * p.hq + h) * p.dh + d4 * 4u) * p.scale;
        }
        q_s[i * QS + d4] = x;
    }
    if (tid < BQ) {
        m_s[tid] = NEG;
        l_s[tid] = 0.0;
    }

    let ti = tid / CT;
    let tj = tid % CT;
    let pr = tid / TPR;
    let pl = tid % TPR;
    var acc: array<vec4<f32>, NV>;
    let nkb = (kv_end + BK - 1u) / BK;
    for (var kb = 0u; kb < nkb; kb++) {
        let k0 = kb * BK;
        stage(0u, tid, k0, kv_end, kstride, kbase);
        workgroupBarrier();

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
        stage(1u, tid, k0, kv_end, kstride, kbase);
        workgroupBarrier();

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

    if (pr < tn) {
        let inv = 1.0 / l_s[pr];
        let orow = ((t0 + pr) * p.hq + h) * p.dh;
        for (var k = 0u; k < NV; k++) {
            let d4 = pl + k * TPR;
            if (d4 < DH4) {
                let o = acc[k] * inv;
                st2_o(orow + d4 * 4u, o.x, o.y);
                st2_o(orow + d4 * 4u + 2u, o.z, o.w);
            }
        }
    }
}
