// gdn_batch_norm: gdn_batch (gdn_batch.wgsl's entry body, `batch_tile`) with Qwen3.5's gated
// RMSNorm per value head read in its epilogue, so a decode step has no norm dispatch between the
// recurrence and the out projection. The workgroup holds a whole head (TJ >= dv, one tile), so
// the head's row of o is in its memory after each token:
//   y = o / sqrt(mean(o^2) + eps) * w * silu(z)
// The sum of squares is taken as rms_norm_gated takes it: p.wgn strided partials (that kernel's
// workgroup for rows of dv, rms_norm.rs `row_wg`), then wg_sum's halving tree (wg_tree.wgsl,
// WG = NT; the invocations past p.wgn add zeros, which leave the tree's sums as they are).
// Bindings: gdn_batch's, then z, w (read) before o (y) and state.
// Constants: gdn_batch's with TJ a power of two >= dv, and WG = NT.

var<workgroup> o_row: array<f32, TJ>;

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

fn tile_out(i: u32, jj: u32, os: f32, own: bool, tid: u32) {
    if (own) {
        o_row[jj] = os;
    }
    workgroupBarrier();
    var ss = 0.0;
    if (tid < p.wgn) {
        for (var c = tid; c < p.dv; c += p.wgn) {
            let v = o_row[c];
            ss += v * v;
        }
    }
    let inv = 1.0 / sqrt(wg_sum(ss, tid) / f32(p.dv) + p.eps);
    if (own) {
        st_o(i, os * inv * ld_w(jj) * silu(ld_z(i)));
    }
}

@compute @workgroup_size(NT)
fn gdn_batch_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) tid: u32) {
    batch_tile(wid, nwg, tid);
}
