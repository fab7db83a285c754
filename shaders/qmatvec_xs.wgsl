// linear over a q4_k w with f32 x, small M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ through the
// integer-dot lanes (q4_k_dp.wgsl) with x turned into byte limbs (limbs.wgsl) by the workgroup
// itself, KC elements at a time, into workgroup memory: no pre-pass dispatch, and the lanes'
// x reads come from workgroup memory. A workgroup is NG = WG / 32 groups of 32 threads, each
// group R consecutive rows (so a workgroup converts x once for NG * R rows); a group's threads
// stride over its rows' slots. Sums by subgroup shuffles where subgroups are exactly 32 wide
// (the `sg` variant), else a tree in workgroup memory `red`.
// Constants from quant/: WG (a multiple of 32), R (1..8), U (1 or 2 slots a trip), KC (a
// multiple of 256); `dots` from qdots.wgsl, `sg_sum` from sg_sum.wgsl.

const GL = 32u;
const NG = WG / GL;

var<workgroup> xs: array<vec4<u32>, KC / 32u * 7u>;
#ifdef_sg
#else_sg
const NSUMS = R; // (qdots.wgsl's tree: the rows' sums only)
var<workgroup> red: array<f32, R * WG>;
#endif_sg

fn xlimb(i: u32) -> vec4<u32> {
    return xs[i];
}
fn xbase(xr: u32) -> u32 {
    return 0u;
}
// x limbs in workgroup memory slot-major (limbs.wgsl): a slot's words KC / 64 apart
fn xstride() -> u32 {
    return KC / 64u;
}
fn xslot() -> u32 {
    return 1u;
}

@compute @workgroup_size(WG)
fn qmatvec_xs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let rpw = NG * R;
    let nb = (p.n + rpw - 1u) / rpw;
    let g = group_index(wid, nwg);
    if (g >= nb * p.m) {
        return;
    }
    let gi = lid / GL;
    let li = lid % GL;
    let n0 = (g % nb) * rpw + gi * R;
    let mi = g / nb;
    let xv = (p.offs[0].x + mi * p.k) / 4u;
    let rows = rows_at(n0, 0u);
    let rows2 = rows_at(n0, 4u);
    var acc = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    for (var c0 = 0u; c0 < p.k; c0 += KC) {
        let kc = min(KC, p.k - c0);
        for (var b = lid; b < kc / 32u; b += WG) {
            let l = limbs_at(xv + c0 / 4u + b * 8u);
            // half b & 1 of chunk slot b / 2
            let st = xstride();
            let v = (b & 1u) * 7u * st + (b >> 1u) * xslot();
            xs[v] = l.v0;
            xs[v + st] = l.v1;
            xs[v + 2u * st] = l.v2;
            xs[v + 3u * st] = l.v3;
            xs[v + 4u * st] = l.v4;
            xs[v + 5u * st] = l.v5;
            xs[v + 6u * st] = l.info;
        }
        workgroupBarrier();
        // chunk-local slots c (x in xs), global slot cs + c for the weights
        let slots = kc / 64u;
        let cs = c0 / 64u;
        for (var c = li; c < slots; c += U * GL) {
            var t: Sums;
            if (U == 2u && c + GL < slots) {
                t = pair_sums(cs + c, GL, xload(c, 0u), xload(c + GL, 0u), rows, rows2);
            } else {
                t = slot_sums(cs + c, xload(c, 0u), rows, rows2);
            }
            acc += t.lo;
            acc2 += t.hi;
        }
        workgroupBarrier();
    }
    let sums = array<f32, 8>(acc.x, acc.y, acc.z, acc.w, acc2.x, acc2.y, acc2.z, acc2.w);
#ifdef_sg
    for (var r = 0u; r < R; r++) {
        let s = sg_sum(sums[r], GL);
        if (li == 0u && n0 + r < p.n) {
            st_y(mi * p.n + n0 + r, s);
        }
    }
#else_sg
    tree_sums(sums, lid, li, GL);
    if (li < R && n0 + li < p.n) {
        st_y(mi * p.n + n0 + li, red[li * WG + gi * GL]);
    }
#endif_sg
}
