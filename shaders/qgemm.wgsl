// linear over a block-quantized w, prefill GEMM: y[M, N] = x[M, K] · W[N, K]ᵀ.
// Each workgroup of 256 threads computes a 64 x 64 tile of y, stepping over K by BK = 32 (K is a
// whole number of blocks, so a multiple of 32): the x tile is converted to f32 and the w tile
// dequantized (wq4 from the type file, exactly as the reference) into workgroup memory, k-major,
// rows padded by 4 floats; each thread then accumulates a 4 x 4 micro-tile from vec4 reads
// (rows ty*4 + i, columns tx*4 + c). Weights stay quantized in device memory: only the 64 x 32
// tile is ever expanded, in workgroup memory.
// Constants from quant/: X_KIND, X_ALIGNED; from the type file: wq4.

const BM = 64u;
const BN = 64u;
const BK = 32u;
const WG = 256u;
const SA = BM + 4u;
const SB = BN + 4u;

var<workgroup> As: array<vec4<f32>, BK * SA / 4u>;
var<workgroup> Bs: array<vec4<f32>, BK * SB / 4u>;

// x[m, k .. k + 3] (zeros for m past M).
fn x4(m: u32, k: u32) -> vec4<f32> {
    if (m >= p.m) {
        return vec4<f32>(0.0);
    }
    let e = m * p.k + k;
    let a = p.offs[0].x + e;
    if (X_KIND == 0u) {
        return bitcast<vec4<f32>>(vec4<u32>(x_buf[a], x_buf[a + 1u], x_buf[a + 2u], x_buf[a + 3u]));
    }
    if (!X_ALIGNED) {
        return vec4<f32>(ld_x(e), ld_x(e + 1u), ld_x(e + 2u), ld_x(e + 3u));
    }
    let w0 = x_buf[a >> 1u];
    let w1 = x_buf[(a >> 1u) + 1u];
    if (X_KIND == 1u) {
        return vec4<f32>(unpack2x16float(w0), unpack2x16float(w1));
    }
    return bitcast<vec4<f32>>(vec4<u32>(w0 << 16u, w0 & 0xffff0000u, w1 << 16u, w1 & 0xffff0000u));
}

fn stage(sh: u32, row: u32, k: u32, v: vec4<f32>) {
    for (var i = 0u; i < 4u; i++) {
        if (sh == 0u) {
            let o = (k + i) * SA + row;
            As[o >> 2u][o & 3u] = v[i];
        } else {
            let o = (k + i) * SB + row;
            Bs[o >> 2u][o & 3u] = v[i];
        }
    }
}

// y[m, n .. n + 3] = v, the columns past N left out; nothing for m past M.
fn store4(m: u32, n: u32, v: vec4<f32>) {
    if (m >= p.m) {
        return;
    }
    let o = m * p.n + n;
    for (var c = 0u; c < 4u; c++) {
        if (n + c < p.n) {
            st_y(o + c, v[c]);
        }
    }
}

@compute @workgroup_size(WG)
fn qgemm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let ntn = (p.n + BN - 1u) / BN;
    let g = group_index(wid, nwg);
    if (g >= ntn * ((p.m + BM - 1u) / BM)) {
        return;
    }
    let mt = (g / ntn) * BM;
    let nt = (g % ntn) * BN;
    let tx = lid % 16u;
    let ty = lid / 16u;
    // staging: row lid / 4 of each tile, elements (lid % 4) * 8 .. + 7 of the K step
    let sr = lid / 4u;
    let sk = (lid % 4u) * 8u;
    let wrow = p.wbase + min(nt + sr, p.n - 1u) * p.rowb;
    var c0 = vec4<f32>();
    var c1 = vec4<f32>();
    var c2 = vec4<f32>();
    var c3 = vec4<f32>();
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        stage(0u, sr, sk, x4(mt + sr, k0 + sk));
        stage(0u, sr, sk + 4u, x4(mt + sr, k0 + sk + 4u));
        stage(1u, sr, sk, wq4(wrow, k0 + sk));
        stage(1u, sr, sk + 4u, wq4(wrow, k0 + sk + 4u));
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let a = As[(kk * SA + ty * 4u) >> 2u];
            let b = Bs[(kk * SB + tx * 4u) >> 2u];
            c0 += a.x * b;
            c1 += a.y * b;
            c2 += a.z * b;
            c3 += a.w * b;
        }
        workgroupBarrier();
    }
    store4(mt + ty * 4u, nt + tx * 4u, c0);
    store4(mt + ty * 4u + 1u, nt + tx * 4u, c1);
    store4(mt + ty * 4u + 2u, nt + tx * 4u, c2);
    store4(mt + ty * 4u + 3u, nt + tx * 4u, c3);
}
