// gdn_chunked, pass 2 of 2: the state carried through the chunks in order.
// One workgroup per (value head h, tile of TJ value columns); the state tile S [DK][TJ] lives in
// workgroup memory. Per chunk (tokens t0 + m, m < cnt), with Tinv, QKD, G, beta, rk, rq from pass 1:
//   1. rhs[m][j] = beta_m (v_mj - exp(G_m) rk_m (k_m . S[:, j]));  qs[m][j] = rq_m (q_m . S[:, j])
//   2. v_new = Tinv rhs                       (= U - W S of transformers' chunked form)
//   3. o[m][j] = exp(G_m) qs[m][j] + sum_{n <= m} QKD[m][n] v_new[n][j]
//   4. S = exp(G_last) S + sum_m (rk_m k_m) exp(G_last - G_m) v_new[m]ᵀ,  G_last = G[C - 1]
//      (padded tokens have g = 0, so G[C - 1] is the cumulative gate of the chunk's last token)
// Bindings: qkv, pre (f32), state (f32) (read), o, state_out (f32) (write); or, as gdn_batch's
// lone prefill, qkv, pre, seqs (read), o, state (the slot pool, in-out). The head before this file
// (gdn.rs `Scan`) says where the state comes from and goes: scan_seq_ok, scan_state_in,
// scan_state_out. Constants: C, NT, TJ, DK.

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    nk: u32,
    nv: u32,
    dk: u32,
    dv: u32,
    c: u32,
    group: u32,
    nchunks: u32,
    ntiles: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

const PB = 2u * C * C + 4u * C;
const PT = C * TJ / NT;         // (m, j) pairs per thread

var<workgroup> s_s: array<f32, DK * TJ>;
var<workgroup> r_s: array<f32, C * TJ>;
var<workgroup> vn_s: array<f32, C * TJ>;
var<workgroup> gv: array<f32, C>;
var<workgroup> bv: array<f32, C>;
var<workgroup> rkv: array<f32, C>;
var<workgroup> rqv: array<f32, C>;

@compute @workgroup_size(NT)
fn gdn_chunk_scan(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.nv * p.ntiles || !scan_seq_ok()) {
        return;
    }
    let h = idx / p.ntiles;
    let jt = idx % p.ntiles;
    let kh = h / p.group;
    let qo = kh * DK;
    let ko = p.nk * DK + kh * DK;
    let vo = 2u * p.nk * DK + h * p.dv;
    let sbase = h * DK * p.dv;

    for (var e = tid; e < DK * TJ; e += NT) {
        let jj = jt * TJ + e % TJ;
        var sv = 0.0;
        if (jj < p.dv) {
            sv = scan_state_in(sbase + (e / TJ) * p.dv + jj);
        }
        s_s[e] = sv;
    }
    for (var chunk = 0u; chunk < p.nchunks; chunk++) {
        let t0 = chunk * C;
        let cnt = min(C, p.t - t0);
        let base = (chunk * p.nv + h) * PB;
        if (tid < C) {
            gv[tid] = ld_pre(base + 2u * C * C + tid);
            bv[tid] = ld_pre(base + 2u * C * C + C + tid);
            rkv[tid] = ld_pre(base + 2u * C * C + 2u * C + tid);
            rqv[tid] = ld_pre(base + 2u * C * C + 3u * C + tid);
        }
        workgroupBarrier();

        // 1. rhs and q.S against the state entering the chunk
        var qs: array<f32, PT>;
        for (var u = 0u; u < PT; u++) {
            let e = tid + u * NT;
            let m = e / TJ;
            let j = e % TJ;
            let jj = jt * TJ + j;
            var rhs = 0.0;
            qs[u] = 0.0;
            if (m < cnt) {
                let row = (t0 + m) * p.c;
                var ks = 0.0;
                var qsum = 0.0;
                for (var i = 0u; i < DK; i++) {
                    let sv = s_s[i * TJ + j];
                    ks = fma(ld_qkv(row + ko + i), sv, ks);
                    qsum = fma(ld_qkv(row + qo + i), sv, qsum);
                }
                var v = 0.0;
                if (jj < p.dv) {
                    v = ld_qkv(row + vo + jj);
                }
                rhs = bv[m] * (v - exp(gv[m]) * rkv[m] * ks);
                qs[u] = rqv[m] * qsum;
            }
            r_s[e] = rhs;
        }
        workgroupBarrier();

        // 2. v_new = Tinv rhs (Tinv is lower triangular)
        for (var u = 0u; u < PT; u++) {
            let e = tid + u * NT;
            let m = e / TJ;
            let j = e % TJ;
            var acc = 0.0;
            if (m < cnt) {
                for (var n = 0u; n <= m; n++) {
                    acc = fma(ld_pre(base + m * C + n), r_s[n * TJ + j], acc);
                }
            }
            vn_s[e] = acc;
        }
        workgroupBarrier();

        // 3. outputs
        for (var u = 0u; u < PT; u++) {
            let e = tid + u * NT;
            let m = e / TJ;
            let jj = jt * TJ + e % TJ;
            if (m < cnt && jj < p.dv) {
                var acc = exp(gv[m]) * qs[u];
                for (var n = 0u; n <= m; n++) {
                    acc = fma(ld_pre(base + C * C + m * C + n), vn_s[n * TJ + e % TJ], acc);
                }
                st_o(((t0 + m) * p.nv + h) * p.dv + jj, acc);
            }
        }

        // 4. the state leaving the chunk
        let glast = gv[C - 1u];
        let decay = exp(glast);
        for (var e = tid; e < DK * TJ; e += NT) {
            let i = e / TJ;
            let j = e % TJ;
            var acc = 0.0;
            for (var m = 0u; m < cnt; m++) {
                let kmi = ld_qkv((t0 + m) * p.c + ko + i) * rkv[m];
                acc = fma(kmi * exp(glast - gv[m]), vn_s[m * TJ + j], acc);
            }
            s_s[e] = fma(decay, s_s[e], acc);
        }
        workgroupBarrier();
    }
    for (var e = tid; e < DK * TJ; e += NT) {
        let jj = jt * TJ + e % TJ;
        if (jj < p.dv) {
            scan_state_out(sbase + (e / TJ) * p.dv + jj, s_s[e]);
        }
    }
}
