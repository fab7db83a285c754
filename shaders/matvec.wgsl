// linear, small M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ, memory-bound on W.
// Each workgroup owns R consecutive weight rows (outputs n0..n0+R) and MR consecutive x rows.
// Its WG threads stride together over K a pair of elements at a time (one word of a 16-bit W),
// so each row is read in long coalesced runs and every x pair loaded serves the R rows. A trip
// of the main loop takes U steps whose loads are all issued before their sums.
// Partial sums (f32) go through workgroup memory `red`: subgroup sums first in the `sg` variant
// (linear/ keeps the lines between #ifdef_sg / #else_sg / #endif_sg of the variant asked for),
// else a tree over the whole workgroup. SWIGLU_OUT (add_rms_norm_linear_swiglu): y [M, N / 2] is
// silu(gate) * up of each pair of weight rows (2j, 2j + 1), both of one workgroup.
//
// Lines `//@name` are filled in by linear/body.rs (`matvec_body`) with straight-line code over
// scalars, unrolled over r < R, i < MR, u < U: private arrays with loop indices end up in slow
// local memory once the compiler does not unroll naga's (bounded) loops.
//   //@decl      let wr{r}, xr{i}: first element of weight row n0 + r / x row m0 + i (clamped
//                to the last row, whose results are not stored); var a{r}_{i} = 0.0
//   //@trip_U    one trip of U steps at pair index j (x{u}_{i}, w{u}_{r} pairs, then the sums)
//   //@trip_1    one step at pair index j
//   //@odd       the last element of an odd K, at element kl
//   //@to_red    each a{r}_{i} (or its subgroup sum) into red[(r * MR + i) * STRIDE + slot]
//   //@y_of      fn y_of(a, i): output a's sum (x row i), as stored
// Constants from linear/: WG, R, MR, U, STRIDE (partials a sum has in `red`: WG, or in the `sg`
// variant the most subgroups a workgroup can have), X_KIND, W_KIND, ALIGNED (see linear.wgsl),
// NS (more sums a workgroup reduces after its R * MR outputs: add_rms_norm_linear's sums of
// squares, one an x row, matvec_norm.wgsl; 0 for a plain linear).
// In the `radd` variant (linear/ keeps the lines between #ifdef_radd / #else_radd / #endif_radd:
// linear_add) each output adds the residual r at its index (binding r after y, f32), loaded at
// the start with the first loads so the epilogue waits on no load of its own.
// A row's order of sums depends on WG and U only, never on R or MR: any shape gives a row the same
// bits, so the engine can pick the shape per M and stay batch-invariant.
// Params and the pair loaders come from linear.wgsl.

const ACC = R * MR;
const SUMS = ACC + NS;

var<workgroup> red: array<f32, SUMS * STRIDE>;

//@y_of

@compute @workgroup_size(WG)
fn matvec(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32
#ifdef_sg
          , @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
          @builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32
#endif_sg
) {
    let nb = (p.n + R - 1u) / R;
    let g = group_index(wid, nwg);
    if (g >= nb * ((p.m + MR - 1u) / MR)) {
        return;
    }
    let n0 = (g % nb) * R;
    let m0 = (g / nb) * MR;
    let kp = p.k / 2u;
#ifdef_radd
    // the residual of the (pair of) outputs this thread stores below: one item a thread there
    // (linear/ asserts (R + 1) / 2 * MR <= WG)
    var r_pre = vec2<f32>(0.0);
    if (lid < (R + 1u) / 2u * MR) {
        let m = m0 + lid % MR;
        let n = n0 + (lid / MR) * 2u;
        if (m < p.m && n < p.n) {
            r_pre.x = ld_r(m * p.n + n);
            if ((lid / MR) * 2u + 1u < R && n + 1u < p.n) {
                r_pre.y = ld_r(m * p.n + n + 1u);
            }
        }
    }
#endif_radd
    //@decl
    var j = lid;
    for (; j + (U - 1u) * WG < kp; j += U * WG) {
        //@trip_U
    }
    for (; j < kp; j += WG) {
        //@trip_1
    }
    if ((p.k & 1u) != 0u && lid == 0u) {
        let kl = p.k - 1u;
        //@odd
    }
#ifdef_sg
    //@to_red
    workgroupBarrier();
    for (var a = lid; a < SUMS; a += WG) {
        var t = 0.0;
        for (var s = 0u; s < nsg; s++) {
            t += red[a * STRIDE + s];
        }
        red[a * STRIDE] = t;
    }
    workgroupBarrier();
#else_sg
    //@to_red
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            for (var a = 0u; a < SUMS; a++) {
                red[a * WG + lid] += red[a * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
#endif_sg
    // one thread a pair of weight rows of one x row: a 16-bit y word is written by one thread
    for (var a = lid; a < (R + 1u) / 2u * MR; a += WG) {
        let i = a % MR;
        let r = (a / MR) * 2u;
        let m = m0 + i;
        let n = n0 + r;
        if (m < p.m) {
            if (SWIGLU_OUT) {
                // rows n, n + 1 are gate and up of output n / 2 (R, n0 and N even), as
                // swiglu_pairs.wgsl computes it
                if (n + 1u < p.n) {
                    let g = y_of(r * MR + i, i);
                    st_y(m * (p.n / 2u) + n / 2u, g / (1.0 + exp(-g)) * y_of((r + 1u) * MR + i, i));
                }
            } else if (r + 1u < R && n + 1u < p.n) {
#ifdef_radd
                st2_y(m * p.n + n, y_of(r * MR + i, i) + r_pre.x, y_of((r + 1u) * MR + i, i) + r_pre.y);
#else_radd
                st2_y(m * p.n + n, y_of(r * MR + i, i), y_of((r + 1u) * MR + i, i));
#endif_radd
            } else if (n < p.n) {
#ifdef_radd
                st_y(m * p.n + n, y_of(r * MR + i, i) + r_pre.x);
#else_radd
                st_y(m * p.n + n, y_of(r * MR + i, i));
#endif_radd
            }
        }
    }
}
