// linear on cooperative matrices: y[M, N] = x[M, K] · W[N, K]ᵀ with f16 16x16 tiles and f32
// accumulation (tensor cores where the adapter has them), for every M.
// A workgroup owns TM x TN output tiles of 16x16 (rows m0.., columns n0..) and is NS subgroups of
// SG invocations. K is cut into chunks of BK; subgroup s takes chunks s, s + NS, s + 2 NS, ...:
// it converts its chunk of x and W to f16 into its own part of workgroup memory, multiplies, and
// keeps its sums in its own accumulators. At the end the NS partial tiles are added in subgroup
// order. So an output's order of sums depends on K alone, never on M, N, TM or TN: a row gets the
// same bits whatever else is in the batch (batch invariance), and rows past M are zeros.
// Lines `//@name` are filled in by linear/coop.rs, unrolled over tm < TM, tn < TN:
//   //@decl   var c{tm}{tn} = coop_mat16x16<f32, C>();
//   //@mma    the A tiles of this k step, the B tiles, then c{tm}{tn} = coopMultiplyAdd(...)
//   //@store  coopStoreT(c{tm}{tn}, &red[...], TN * 16u) for each tile
// Constants from linear/: NS, SG, BK, TM, TN, X_KIND, W_KIND, ALIGNED (see linear.wgsl).

const XT = TM * 16u * BK; // x chunk of one subgroup, f16 elements
const WT = TN * 16u * BK; // W chunk of one subgroup
const OT = TM * 16u * TN * 16u; // output tile of the workgroup

var<workgroup> xs: array<f16, NS * XT>;
var<workgroup> ws: array<f16, NS * WT>;
var<workgroup> red: array<f32, NS * OT>;

// Element k of row `row` (0 past the end) as f16, from x or W: `e0` is the row's first element
// (absolute), `n` the rows the operand has.
fn x_at(row: u32, k: u32) -> vec2<f16> {
    if (row >= p.m || k >= p.k) {
        return vec2<f16>(0.0h, 0.0h);
    }
    let e = p.offs[0].x + row * p.k + k;
    if (k + 1u < p.k) {
        return vec2<f16>(x_pair(e));
    }
    return vec2<f16>(f16(x_pair(e).x), 0.0h);
}

fn w_at(row: u32, k: u32) -> vec2<f16> {
    if (row >= p.n || k >= p.k) {
        return vec2<f16>(0.0h, 0.0h);
    }
    let e = p.offs[0].y + row * p.k + k;
    if (k + 1u < p.k) {
        return vec2<f16>(w_pair(e));
    }
    return vec2<f16>(f16(w_pair(e).x), 0.0h);
}

@compute @workgroup_size(NS * SG)
fn linear_coop(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let nb = (p.n + TN * 16u - 1u) / (TN * 16u);
    // No early return for the grid's spare workgroups (cooperative ops want uniform control
    // flow): their rows start past M, so they stage zeros and store nothing.
    let g = group_index(wid, nwg);
    let n0 = (g % nb) * TN * 16u;
    let m0 = (g / nb) * TM * 16u;
    let s = lid / SG;
    let lane = lid % SG;
    let xb = s * XT;
    let wb = s * WT;
    //@decl
    let chunks = (p.k + BK - 1u) / BK;
    let trips = (chunks + NS - 1u) / NS;
    for (var t = 0u; t < trips; t++) {
        // a chunk past K (the last trip of some subgroups) stages zeros: adding them changes nothing
        let k0 = (t * NS + s) * BK;
        for (var i = lane; i < XT / 2u; i += SG) {
            let r = (2u * i) / BK;
            let c = (2u * i) % BK;
            let v = x_at(m0 + r, k0 + c);
            xs[xb + 2u * i] = v.x;
            xs[xb + 2u * i + 1u] = v.y;
        }
        for (var i = lane; i < WT / 2u; i += SG) {
            let r = (2u * i) / BK;
            let c = (2u * i) % BK;
            let v = w_at(n0 + r, k0 + c);
            ws[wb + 2u * i] = v.x;
            ws[wb + 2u * i + 1u] = v.y;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            //@mma
        }
        workgroupBarrier();
    }
    let rb = s * OT;
    //@store
    workgroupBarrier();
    for (var i = lid; i < OT; i += NS * SG) {
        let r = i / (TN * 16u);
        let c = i % (TN * 16u);
        let m = m0 + r;
        let n = n0 + c;
        if (m < p.m && n < p.n) {
            var v = red[i];
            for (var j = 1u; j < NS; j++) {
                v += red[j * OT + i];
            }
            st_y(m * p.n + n, v);
        }
    }
}
