// linear, prefill GEMM: y[M, N] = x[M, K] · W[N, K]ᵀ.
// Each workgroup of WG = (BM / TM) * (BN / TN) threads computes a BM x BN tile of y, stepping
// over K by BK: both operand tiles are converted to f32 into workgroup memory (k-major, rows
// padded by 4 floats; each thread converts pairs along K, PAIRS threads to a row), then each
// thread accumulates a TM x TN micro-tile from vec4 reads. A thread's rows are ty*4 + i (+ BM/2 for the second half when TM = 8), its columns tx*4 + c
// (+ BN/2 when TN = 8), so a subgroup's vec4 reads of one k row are contiguous. Every index is
// bounds-checked: any M, N, K (odd ones too) and any element offsets.
//
// Lines `//@name` are filled in by linear/body.rs (`gemm_body`) with straight-line code over the
// micro-tile, unrolled over h < TM / 4, i < 4, c < TN / 4 (accumulators c{h}_{i}_{c}: vec4, the
// columns c*HN + tx*4 .. +3 of row h*HM + ty*4 + i), so they stay in registers:
//   //@decl   var c{h}_{i}_{c} = vec4<f32>(); for each pair q a thread stages per step (x and w):
//             its tile row ra{q} / rb{q} and k ka{q} / kb{q}, and registers px{q} / pw{q}
//   //@load   px{q} / pw{q} = the pairs at K step kn (zeros past M, N or K)
//   //@stage  px{q} / pw{q} into As / Bs (k-major: As[k][row])
//   //@fma    at k row kk: a{h} = As[..], b{c} = Bs[..], c{h}_{i}_{c} += a{h}[i] * b{c}
//   //@store  store4(mt + h*HM + ty*4 + i, nt + c*HN + tx*4, c{h}_{i}_{c})
// Constants from linear/: BM, BN, BK, TM, TN (TM, TN in {4, 8}), WG, X_KIND, W_KIND, ALIGNED.
// Params and the pair loaders come from linear.wgsl.

const SA = BM + 4u;
const SB = BN + 4u;
const TX = BN / TN;
const AM = TM / 4u;
const AN = TN / 4u;
const HM = BM / AM;
const HN = BN / AN;
const PAIRS = BK / 2u;

var<workgroup> As: array<vec4<f32>, BK * SA / 4u>;
var<workgroup> Bs: array<vec4<f32>, BK * SB / 4u>;

// x[m, k], x[m, k + 1] with zeros past M or K.
fn x_tile_pair(m: u32, k: u32) -> vec2<f32> {
    if (m >= p.m || k >= p.k) {
        return vec2<f32>(0.0);
    }
    let rel = m * p.k + k;
    if (k + 1u < p.k) {
        return x_pair(p.offs[0].x + rel);
    }
    return vec2<f32>(ld_x(rel), 0.0);
}

fn w_tile_pair(n: u32, k: u32) -> vec2<f32> {
    if (n >= p.n || k >= p.k) {
        return vec2<f32>(0.0);
    }
    let rel = n * p.k + k;
    if (k + 1u < p.k) {
        return w_pair(p.offs[0].y + rel);
    }
    return vec2<f32>(ld_w(rel), 0.0);
}

// y[m, n .. n + 3] = v, the columns past N left out; nothing for m past M.
fn store4(m: u32, n: u32, v: vec4<f32>) {
    if (m >= p.m) {
        return;
    }
    let o = m * p.n + n;
    if (n + 3u < p.n) {
        st2_y(o, v.x, v.y);
        st2_y(o + 2u, v.z, v.w);
    } else {
        if (n < p.n) { st_y(o, v.x); }
        if (n + 1u < p.n) { st_y(o + 1u, v.y); }
        if (n + 2u < p.n) { st_y(o + 2u, v.z); }
    }
}

@compute @workgroup_size(WG)
fn gemm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let ntn = (p.n + BN - 1u) / BN;
    let ntm = (p.m + BM - 1u) / BM;
    let g = group_index(wid, nwg);
    if (g >= ntn * ntm) {
        return;
    }
    let mt = (g / ntn) * BM;
    let nt = (g % ntn) * BN;
    let tx = lid % TX;
    let ty = lid / TX;
    //@decl
    // Software pipelining: the global loads of the next K step are issued before the sums of
    // this one, so their latency hides behind the arithmetic.
    var kn = 0u;
    //@load
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        //@stage
        workgroupBarrier();
        kn = k0 + BK;
        //@load
        for (var kk = 0u; kk < BK; kk++) {
            //@fma
        }
        workgroupBarrier();
    }
    //@store
}
