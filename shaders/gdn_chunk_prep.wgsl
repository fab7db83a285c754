// gdn_chunked, pass 1 of 2: everything inside one chunk that does not depend on the state.
// One workgroup per (chunk, value head h); tokens m of the chunk are t0 + m, t0 = chunk * C, and
// the cnt = min(C, T - t0) valid ones; padded tokens have q = k = 0, beta = 0, g = 0.
// Writes the block `pre[(chunk * nv + h) * PB ..]` (f32):
//   [0, C*C)        Tinv = (I + A)^-1, A[m][n] = beta_m (k_m . k_n) exp(G_m - G_n) for n < m
//   [C*C, 2*C*C)    QKD[m][n] = (q_m . k_n) exp(G_m - G_n) for n <= m, else 0
//   then C each of  G (inclusive cumsum of g), beta, rk (k's l2 factor), rq (q's l2 factor / sqrt(dk))
// (dot products over the raw rows, times rk/rq). The unit-lower-triangular inverse is by forward
// substitution, one column per thread.
// Bindings: qkv, b, a, a_log, dt_bias (read), pre (write, f32). Constants: C, NT, DS (dk slice).

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
}
@group(0) @binding(0) var<uniform> p: Params;

const PB = 2u * C * C + 4u * C;
const PP = C * C / NT;          // (m, n) pairs per thread

var<workgroup> sh: array<f32, C * C>;   // k and q slices [C][DS] each, then A [C][C]
var<workgroup> gv: array<f32, C>;
var<workgroup> bv: array<f32, C>;
var<workgroup> rkv: array<f32, C>;
var<workgroup> rqv: array<f32, C>;

@compute @workgroup_size(NT)
fn gdn_chunk_prep(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.nchunks * p.nv) {
        return;
    }
    let chunk = idx / p.nv;
    let h = idx % p.nv;
    let kh = h / p.group;
    let t0 = chunk * C;
    let cnt = min(C, p.t - t0);
    let qo = kh * p.dk;
    let ko = p.nk * p.dk + kh * p.dk;

    // 1. per-token scalars
    if (tid < C) {
        var g = 0.0;
        var beta = 0.0;
        var rk = 0.0;
        var rq = 0.0;
        if (tid < cnt) {
            let t = t0 + tid;
            let row = t * p.c;
            var ssq = 0.0;
            var ssk = 0.0;
            for (var i = 0u; i < p.dk; i++) {
                let qv = ld_qkv(row + qo + i);
                let kv = ld_qkv(row + ko + i);
                ssq += qv * qv;
                ssk += kv * kv;
            }
            rq = 1.0 / (sqrt(ssq + L2_EPS) * sqrt(f32(p.dk)));
            rk = 1.0 / sqrt(ssk + L2_EPS);
            beta = sigmoid(ld_b(t * p.nv + h));
            g = -exp(ld_a_log(h)) * softplus(ld_a(t * p.nv + h) + ld_dt_bias(h));
        }
        gv[tid] = g;
        bv[tid] = beta;
        rkv[tid] = rk;
        rqv[tid] = rq;
    }
    workgroupBarrier();
    if (tid == 0u) {
        for (var m = 1u; m < C; m++) {
            gv[m] += gv[m - 1u];
        }
    }
    workgroupBarrier();

    // 2. raw dot products k_m . k_n and q_m . k_n for n <= m, over dk in slices of DS
    var acc_k: array<f32, PP>;
    var acc_q: array<f32, PP>;
    for (var d0 = 0u; d0 < p.dk; d0 += DS) {
        for (var e = tid; e < C * DS; e += NT) {
            let m = e / DS;
            let d = d0 + e % DS;
            var kv = 0.0;
            var qv = 0.0;
            if (m < cnt && d < p.dk) {
                let row = (t0 + m) * p.c;
                kv = ld_qkv(row + ko + d);
                qv = ld_qkv(row + qo + d);
            }
            sh[e] = kv;
            sh[C * DS + e] = qv;
        }
        workgroupBarrier();
        for (var u = 0u; u < PP; u++) {
            let pair = tid + u * NT;
            let m = pair / C;
            let n = pair % C;
            if (n <= m) {
                var ak = 0.0;
                var aq = 0.0;
                for (var d = 0u; d < DS; d++) {
                    let kn = sh[n * DS + d];
                    ak = fma(sh[m * DS + d], kn, ak);
                    aq = fma(sh[C * DS + m * DS + d], kn, aq);
                }
                acc_k[u] += ak;
                acc_q[u] += aq;
            }
        }
        workgroupBarrier();
    }

    // 3. A into workgroup memory, QKD out
    let base = (chunk * p.nv + h) * PB;
    for (var u = 0u; u < PP; u++) {
        let pair = tid + u * NT;
        let m = pair / C;
        let n = pair % C;
        var av = 0.0;
        var qkd = 0.0;
        if (n <= m) {
            let dmn = exp(gv[m] - gv[n]);
            qkd = rqv[m] * rkv[n] * acc_q[u] * dmn;
            if (n < m) {
                av = bv[m] * rkv[m] * rkv[n] * acc_k[u] * dmn;
            }
        }
        sh[pair] = av;
        st_pre(base + C * C + pair, qkd);
    }
    workgroupBarrier();

    // 4. Tinv column n by forward substitution: x[m] = [m == n] - sum_{n <= l < m} A[m][l] x[l]
    if (tid < C) {
        let n = tid;
        var x: array<f32, C>;
        for (var m = 0u; m < C; m++) {
            var v = select(0.0, 1.0, m == n);
            for (var l = n; l < m; l++) {
                v -= sh[m * C + l] * x[l];
            }
            x[m] = v;
            st_pre(base + m * C + n, v);
        }
        st_pre(base + 2u * C * C + n, gv[n]);
        st_pre(base + 2u * C * C + C + n, bv[n]);
        st_pre(base + 2u * C * C + 2u * C + n, rkv[n]);
        st_pre(base + 2u * C * C + 3u * C + n, rqv[n]);
    }
}
