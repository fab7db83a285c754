// linear over a block-quantized w, small M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ.
// A workgroup of WG threads owns R (1..8) consecutive weight rows and one x row. Its threads
// stride over the row's lane slots together (SLOTS a block), consecutive threads on consecutive
// slots, so weights and x are both read in coalesced runs; a slot's x values are loaded once
// (`xload`) and serve the R rows (`dots` over the lanes' `slot_dot`, four rows a call), held in plain registers (no private
// arrays). U slots a trip (U = 2 only where the row is whole trips of two, else one). f32
// accumulation; partial sums reduced through workgroup memory `red` (subgroup sums first in the
// `sg` variant: quant/ keeps the lines between #ifdef_sg / #else_sg / #endif_sg of the variant
// asked for), else a tree. In the `radd` variant (linear_add: quant/ keeps the lines between
// #ifdef_radd / #else_radd / #endif_radd) each output adds the residual r at its index (binding
// r after y, f32), loaded with the first loads so the epilogue waits on no load of its own.
// The lanes come from qlanes.wgsl (scalar words, any x dtype, over the type file's lane_dot) or
// from the type's _v4 file (f32 x and weights as vec4 words: q4_k_v4.wgsl, q8_0_v4.wgsl).
// Constants from quant/: WG, R, U, X_KIND (0 f32, 1 f16, 2 bf16), X_ALIGNED (16-bit x
// rows start on a word), SWIGLU_OUT (linear_swiglu, add_rms_norm_linear_swiglu: y [M, N / 2] is
// silu(gate) * up of each pair of weight rows (2j, 2j + 1), both of one workgroup); in the `norm`
// variant (quant/ keeps the lines between #ifdef_norm / #else_norm / #endif_norm of the variant
// asked for: x is the rows of a residual add + RMSNorm, qx_norm.wgsl, whose sum of squares is
// reduced after the R rows' sums (NS = 1) and scales them) also NW_OFFSET; from the type / lanes
// files: QK, SLOTS, struct X, xload, slot_dot; `dots` from qdots.wgsl, `sg_sum` from sg_sum.wgsl.

#ifdef_norm
const NS = 1u;
#else_norm
const NS = 0u;
#endif_norm
const NSUMS = R + NS;
var<workgroup> red: array<f32, NSUMS * WG>;

// Output r's sum (after the reduction), times the row's RMS factor where x is normed rows
fn y_of(r: u32) -> f32 {
#ifdef_norm
    return red[r * WG] * norm_scale(red[R * WG]);
#else_norm
    return red[r * WG];
#endif_norm
}

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
    let slots = (p.k / QK) * SLOTS;
    let xr = mi * p.k;
#ifdef_radd
    var r_pre = 0.0;
    if (lid < R && n0 + lid < p.n) {
        r_pre = ld_r(mi * p.n + n0 + lid);
    }
#endif_radd
#ifdef_norm
    norm_row(xr, n0);
#endif_norm
    let rows = rows_at(n0, 0u);
    let rows2 = rows_at(n0, 4u);
    var acc = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    // U (1, 2 or 4) slots a trip, straight-line, so their loads are in flight together. U = 2
    // only where the row is whole trips of two slots a thread (no partial trip), else one a trip
    // (K = 1024 q4_k rows are 32 slots: one a thread); U = 4: a partial trip one at a time.
    let u = select(select(1u, 2u, slots % (2u * WG) == 0u), U, U != 2u);
    for (var w = lid; w < slots; w += u * WG) {
        if (u == 2u) {
            let t = pair_sums(w, WG, xload(w, xr), xload(w + WG, xr), rows, rows2);
            acc += t.lo;
            acc2 += t.hi;
            continue;
        }
        if (u == 4u && w + 3u * WG < slots) {
            let t0 = pair_sums(w, WG, xload(w, xr), xload(w + WG, xr), rows, rows2);
            let t1 = pair_sums(w + 2u * WG, WG, xload(w + 2u * WG, xr), xload(w + 3u * WG, xr), rows, rows2);
            acc += t0.lo + t1.lo;
            acc2 += t0.hi + t1.hi;
            continue;
        }
        for (var v = w; v < min(slots, w + u * WG); v += WG) {
            let t = slot_sums(v, xload(v, xr), rows, rows2);
            acc += t.lo;
            acc2 += t.hi;
        }
    }
    var sums = array<f32, 8>(acc.x, acc.y, acc.z, acc.w, acc2.x, acc2.y, acc2.z, acc2.w);
#ifdef_norm
    sums[R] = ss_part; // (R < 8 here: quant/)
#endif_norm
#ifdef_sg
    for (var r = 0u; r < NSUMS; r++) {
        let s = sg_sum(sums[r], sgs);
        if (sgi == 0u) {
            red[r * WG + sgid] = s;
        }
    }
    workgroupBarrier();
    if (lid < NSUMS) {
        var t = 0.0;
        for (var s = 0u; s < nsg; s++) {
            t += red[lid * WG + s];
        }
        red[lid * WG] = t;
    }
    workgroupBarrier();
#else_sg
    tree_sums(sums, lid, lid, WG);
#endif_sg
    if (SWIGLU_OUT) {
        // rows n0 + 2j, n0 + 2j + 1 are gate and up of output n0 / 2 + j (R, n0 and N even), as
        // swiglu_pairs.wgsl computes it
        if (lid < R / 2u && n0 + 2u * lid + 1u < p.n) {
            let g = y_of(2u * lid);
            st_y(mi * (p.n / 2u) + n0 / 2u + lid, g / (1.0 + exp(-g)) * y_of(2u * lid + 1u));
        }
    } else if (lid < R && n0 + lid < p.n) {
#ifdef_radd
        st_y(mi * p.n + n0 + lid, y_of(lid) + r_pre);
#else_radd
        st_y(mi * p.n + n0 + lid, y_of(lid));
#endif_radd
    }
}
