// linear over a block-quantized w, small M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ.
// A workgroup of WG threads owns R consecutive weight rows and one x row. Its threads stride over
// the row's matvec units together (a unit: 16 bytes of quants of one block, see the type file),
// consecutive threads on consecutive units, so each row is read in coalesced runs; the unit's x
// vectors are loaded once and serve the R rows. f32 accumulation; partial sums reduced through
// workgroup memory `red` (subgroup sums first in the `sg` variant: quant.rs keeps the lines
// between #ifdef_sg / #else_sg / #endif_sg of the variant asked for), else a tree.
// Constants from quant.rs: WG, R, X_KIND (0 f32, 1 f16, 2 bf16), X_ALIGNED (16-bit x rows start
// on a word); from the type file: QK, UPB, XV, unit_x, unit_dot.

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
    let units = (p.k / QK) * UPB;
    let xr = mi * p.k;
    var acc: array<f32, R>;
    for (var r = 0u; r < R; r++) {
        acc[r] = 0.0;
    }
    for (var u = lid; u < units; u += WG) {
        var xv: array<vec4<f32>, XV>;
        for (var j = 0u; j < XV; j++) {
            xv[j] = x4s(xr + unit_x(u, j));
        }
        for (var r = 0u; r < R; r++) {
            // rows past N repeat the last row; their sums are not stored
            acc[r] += unit_dot(p.wbase + min(n0 + r, p.n - 1u) * p.rowb, u, xv);
        }
    }
#ifdef_sg
    for (var r = 0u; r < R; r++) {
        let s = sg_sum(acc[r], sgs);
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
        red[r * WG + lid] = acc[r];
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
