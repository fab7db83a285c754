// linear over a block-quantized w, small M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ.
// A workgroup of WG threads owns R (1..4) consecutive weight rows and one x row. Its threads
// stride over the row's lane slots together (a slot: one word of quants, LW a block, see the type
// file), consecutive threads on consecutive words, so weights and x are both read in coalesced
// runs; a slot's x vectors (NX of them) are loaded once and serve the R rows, held in plain
// registers (no private arrays). f32 accumulation; partial sums reduced through
// workgroup memory `red` (subgroup sums first in the `sg` variant: quant.rs keeps the lines
// between #ifdef_sg / #else_sg / #endif_sg of the variant asked for), else a tree.
// Constants from quant.rs: WG, R, X_KIND (0 f32, 1 f16, 2 bf16), X_ALIGNED (16-bit x rows start
// on a word); from the type file: QK, LW, NX, lane_x, lane_dot.

var<workgroup> red: array<f32, R * WG>;

// x elements e .. e + 3 of the row-major x (e relative to its binding offset), times UNLANES.
fn x4s(e: u32) -> vec4<f32> {
    let a = p.offs[0].x + e;
    if (X_KIND == 0u) {
        return bitcast<vec4<f32>>(vec4<u32>(x_buf[a], x_buf[a + 1u], x_buf[a + 2u], x_buf[a + 3u])) * UNLANES;
    }
    if (!X_ALIGNED) {
        return vec4<f32>(ld_x(e), ld_x(e + 1u), ld_x(e + 2u), ld_x(e + 3u)) * UNLANES;
    }
    let w0 = x_buf[a >> 1u];
    let w1 = x_buf[(a >> 1u) + 1u];
    if (X_KIND == 1u) {
        return vec4<f32>(unpack2x16float(w0), unpack2x16float(w1)) * UNLANES;
    }
    return bitcast<vec4<f32>>(vec4<u32>(w0 << 16u, w0 & 0xffff0000u, w1 << 16u, w1 & 0xffff0000u)) * UNLANES;
}

// The dot products of lane slot w (R of them; rows past R left 0) for the x row at element xr.
fn slot(w: u32, xr: u32, rows: vec4<u32>) -> vec4<f32> {
    let b = w / LW;
    let j = w % LW;
    let xa = x4s(xr + lane_x(b, j, 0u));
    var xb = vec4<f32>(0.0);
    var xc = vec4<f32>(0.0);
    var xd = vec4<f32>(0.0);
    if (NX > 1u) {
        xb = x4s(xr + lane_x(b, j, 1u));
    }
    if (NX > 2u) {
        xc = x4s(xr + lane_x(b, j, 2u));
        xd = x4s(xr + lane_x(b, j, 3u));
    }
    var v = vec4<f32>(0.0);
    v.x = lane_dot(rows.x, b, j, xa, xb, xc, xd);
    if (R > 1u) {
        v.y = lane_dot(rows.y, b, j, xa, xb, xc, xd);
    }
    if (R > 2u) {
        v.z = lane_dot(rows.z, b, j, xa, xb, xc, xd);
        v.w = lane_dot(rows.w, b, j, xa, xb, xc, xd);
    }
    return v;
}

#ifdef_sg
// Butterfly sum over the subgroup (shuffles: naga 30 rejects `enable subgroups;`).
fn sg_sum(v: f32, sgs: u32) -> f32 {
    var s = v;
    for (var d = sgs / 2u; d > 0u; d >>= 1u) {
        s += subgroupShuffleXor(s, d);
    }
    return s;
}

#endif_sg
@compute @workgroup_size(WG)
fn qmatvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32
#ifdef_sg
           , @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
           @builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32
#endif_sg
) {
    let nb = (p.n + R - 1u) / R;
    let g = group_index(wid, nwg);
    if (g >= nb * p.m) {
        return;
    }
    let n0 = (g % nb) * R;
    let mi = g / nb;
    let slots = (p.k / QK) * LW;
    let xr = mi * p.k;
    // rows past N repeat the last row; their sums are not stored
    let rb = p.wbase + min(n0, p.n - 1u) * p.rowb;
    let last = p.wbase + (p.n - 1u) * p.rowb;
    let rows = vec4<u32>(rb, min(rb + p.rowb, last), min(rb + 2u * p.rowb, last), min(rb + 3u * p.rowb, last));
    var acc = vec4<f32>(0.0);
    // two slots a trip, straight-line (the second clamped and masked), so both slots' loads are
    // in flight together
    for (var w = lid; w < slots; w += 2u * WG) {
        let w2 = w + WG;
        let a = slot(w, xr, rows);
        let b = slot(min(w2, slots - 1u), xr, rows);
        acc += a + select(vec4<f32>(0.0), b, w2 < slots);
    }
    let sums = array<f32, 4>(acc.x, acc.y, acc.z, acc.w);
#ifdef_sg
    for (var r = 0u; r < R; r++) {
        let s = sg_sum(sums[r], sgs);
        if (sgi == 0u) {
            red[r * WG + sgid] = s;
        }
    }
    workgroupBarrier();
    if (lid < R) {
        var t = 0.0;
        for (var s = 0u; s < nsg; s++) {
            t += red[lid * WG + s];
        }
        red[lid * WG] = t;
    }
    workgroupBarrier();
#else_sg
    for (var r = 0u; r < R; r++) {
        red[r * WG + lid] = sums[r];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            for (var r = 0u; r < R; r++) {
                red[r * WG + lid] += red[r * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
#endif_sg
    if (lid < R && n0 + lid < p.n) {
        st_y(mi * p.n + n0 + lid, red[lid * WG]);
    }
}
