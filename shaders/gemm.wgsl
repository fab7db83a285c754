// linear, prefill GEMM: y[M, N] = x[M, K] · W[N, K]ᵀ.
// Each workgroup of WG = (BM / TM) * (BN / TN) threads computes a BM x BN tile of y, stepping
// over K by BK: both operand tiles are converted to f32 into workgroup memory (k-major, rows
// padded by 4 floats), then each thread accumulates a TM x TN micro-tile from vec4 reads. A
// thread's rows are ty*4 + i (+ BM/2 for the second half when TM = 8), its columns tx*4 + c
// (+ BN/2 when TN = 8), so a subgroup's vec4 reads of one k row are contiguous. Every index is
// bounds-checked: any M, N, K (odd ones too) and any element offsets.
// Constants from linear.rs: BM, BN, BK, TM, TN (TM, TN in {4, 8}), WG, X_KIND, W_KIND.
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
    var acc: array<vec4<f32>, AM * 4u * AN>;
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        // Stage the tiles: each thread converts pairs along K (PAIRS threads share a row).
        for (var q = 0u; q < BM * PAIRS / WG; q++) {
            let pi = lid + q * WG;
            let row = pi / PAIRS;
            let kk = (pi % PAIRS) * 2u;
            let v = x_tile_pair(mt + row, k0 + kk);
            let a = kk * SA + row;
            As[a >> 2u][a & 3u] = v.x;
            As[(a + SA) >> 2u][(a + SA) & 3u] = v.y;
        }
        for (var q = 0u; q < BN * PAIRS / WG; q++) {
            let pi = lid + q * WG;
            let row = pi / PAIRS;
            let kk = (pi % PAIRS) * 2u;
            let v = w_tile_pair(nt + row, k0 + kk);
            let b = kk * SB + row;
            Bs[b >> 2u][b & 3u] = v.x;
            Bs[(b + SB) >> 2u][(b + SB) & 3u] = v.y;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            var av: array<vec4<f32>, AM>;
            var bv: array<vec4<f32>, AN>;
            for (var h = 0u; h < AM; h++) {
                av[h] = As[(kk * SA + h * HM + ty * 4u) >> 2u];
            }
            for (var h = 0u; h < AN; h++) {
                bv[h] = Bs[(kk * SB + h * HN + tx * 4u) >> 2u];
            }
            for (var h = 0u; h < AM; h++) {
                for (var i = 0u; i < 4u; i++) {
                    let a = av[h][i];
                    for (var c = 0u; c < AN; c++) {
                        acc[(h * 4u + i) * AN + c] += a * bv[c];
                    }
                }
            }
        }
        workgroupBarrier();
    }
    for (var h = 0u; h < AM; h++) {
        for (var i = 0u; i < 4u; i++) {
            let m = mt + h * HM + ty * 4u + i;
            if (m >= p.m) {
                continue;
            }
            for (var c = 0u; c < AN; c++) {
                let n = nt + c * HN + tx * 4u;
                let v = acc[(h * 4u + i) * AN + c];
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
        }
    }
}
