// linear, small M (decode): y[M, N] = x[M, K] · W[N, K]ᵀ, memory-bound on W.
// Each workgroup owns R consecutive weight rows (outputs n0..n0+R) and MR consecutive x rows.
// Its WG threads stride together over K, one weight word (two 16-bit elements, or one f32 pair)
// per thread per row and step, so each row is read in long coalesced runs and every x pair loaded
// is reused for the R rows. Partial sums (f32) are reduced per subgroup first in the `sg` variant
// (linear.rs keeps the lines between the #ifdef_sg / #else_sg / #endif_sg markers of the variant
// asked for), else by a tree in workgroup memory.
// Constants from linear.rs: WG, R, MR, X_KIND / W_KIND (0 f32, 1 f16, 2 bf16).
// Params and the pair loaders come from linear.wgsl.

const ACC = R * MR;

var<workgroup> red: array<f32, ACC * WG>;

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
    // Absolute element index of each row's start; rows past the end re-read the last row.
    var wrow: array<u32, R>;
    for (var r = 0u; r < R; r++) {
        wrow[r] = p.offs[0].y + min(n0 + r, p.n - 1u) * p.k;
    }
    var xrow: array<u32, MR>;
    for (var i = 0u; i < MR; i++) {
        xrow[i] = p.offs[0].x + min(m0 + i, p.m - 1u) * p.k;
    }
    var acc: array<f32, ACC>;
    // Two steps of WG pairs per trip (the second masked at the end) keep more loads in flight.
    for (var j = lid; j < kp; j += 2u * WG) {
        let ok2 = j + WG < kp;
        let j2 = select(j, j + WG, ok2);
        var xa: array<vec2<f32>, MR>;
        var xb: array<vec2<f32>, MR>;
        for (var i = 0u; i < MR; i++) {
            xa[i] = x_pair(xrow[i] + 2u * j);
            xb[i] = x_pair(xrow[i] + 2u * j2);
        }
        for (var r = 0u; r < R; r++) {
            let wa = w_pair(wrow[r] + 2u * j);
            let wb = w_pair(wrow[r] + 2u * j2);
            for (var i = 0u; i < MR; i++) {
                acc[r * MR + i] += dot(xa[i], wa) + select(0.0, dot(xb[i], wb), ok2);
            }
        }
    }
    if ((p.k & 1u) != 0u && lid == 0u) {
        let kl = p.k - 1u;
        for (var r = 0u; r < R; r++) {
            let wl = ld_w(min(n0 + r, p.n - 1u) * p.k + kl);
            for (var i = 0u; i < MR; i++) {
                acc[r * MR + i] += ld_x(min(m0 + i, p.m - 1u) * p.k + kl) * wl;
            }
        }
    }
#ifdef_sg
    // Butterfly sums over the subgroup (shuffles rather than the reduction builtin: naga 30
    // rejects the `enable subgroups;` directive that the dispatcher adds for the latter).
    for (var a = 0u; a < ACC; a++) {
        var s = acc[a];
        for (var d = sgs / 2u; d > 0u; d >>= 1u) {
            s += subgroupShuffleXor(s, d);
        }
        if (sgi == 0u) {
            red[a * WG + sgid] = s;
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        for (var a = 0u; a < ACC; a++) {
            var t = 0.0;
            for (var s = 0u; s < nsg; s++) {
                t += red[a * WG + s];
            }
            acc[a] = t;
        }
    }
#else_sg
    for (var a = 0u; a < ACC; a++) {
        red[a * WG + lid] = acc[a];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            for (var a = 0u; a < ACC; a++) {
                red[a * WG + lid] += red[a * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        for (var a = 0u; a < ACC; a++) {
            acc[a] = red[a * WG];
        }
    }
#endif_sg
    if (lid == 0u) {
        for (var i = 0u; i < MR; i++) {
            let m = m0 + i;
            if (m >= p.m) {
                break;
            }
            for (var r = 0u; r < R; r += 2u) {
                let n = n0 + r;
                if (r + 1u < R && n + 1u < p.n) {
                    st2_y(m * p.n + n, acc[r * MR + i], acc[(r + 1u) * MR + i]);
                } else if (n < p.n) {
                    st_y(m * p.n + n, acc[r * MR + i]);
                }
            }
        }
    }
}
