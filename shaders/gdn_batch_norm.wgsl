// gdn_batch_norm: gdn_batch (gdn_batch.wgsl's entry body, `batch_tile`, the same tiles and
// bits) with Qwen3.5's gated RMSNorm per value head read after it, for a decode batch (one token
// a sequence; gdn_batch_norm.rs runs the composition for every other batch):
//   y = o / sqrt(mean(o^2) + eps) * w * silu(z)
// The norm needs the head's whole row of o, which its ntiles workgroups share out. The
// hand-over, as paged_attention_lone's: each tile stores its columns of o through atomics into
// `rec` (device-scope words, which skip the non-coherent caches plain loads may hit), passes
// storageBarrier (a device-scope release), and one thread adds 1 to the (row, head)'s counter in
// `cnt`; the workgroup that sees ntiles - 1 there resets the counter to 0 for the next dispatch,
// passes storageBarrier (the acquire), reads the row through atomics and stores it normed. No
// workgroup waits for another.
// The sum of squares is taken as rms_norm_gated takes it: p.wgn strided partials (that kernel's
// workgroup for rows of dv, rms_norm.rs `row_wg`), then wg_sum's halving tree (wg_tree.wgsl,
// WG = NT; the invocations past p.wgn add zeros, which leave the tree's sums as they are).
// Bindings: gdn_batch's with z, w (read) before o (y) and state, then cnt (atomic words, one a
// (row, head), zero between dispatches) and rec (atomic words: o's f32 bits, [T, nv, dv]).

var<workgroup> arrived: u32;

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

fn tile_out(i: u32, jj: u32, os: f32, own: bool, tid: u32) {
    if (own) {
        atst_rec(i, bitcast<u32>(os));
    }
    storageBarrier();
    // (row, head) of this token: i - jj is its row of o's start, for every invocation
    let hd = (i - jj) / p.dv;
    if (tid == 0u) {
        arrived = atadd_cnt(hd, 1u);
    }
    if (workgroupUniformLoad(&arrived) != p.ntiles - 1u) {
        return;
    }
    if (tid == 0u) {
        atst_cnt(hd, 0u);
    }
    storageBarrier();
    let base = hd * p.dv;
    var ss = 0.0;
    if (tid < p.wgn) {
        for (var c = tid; c < p.dv; c += p.wgn) {
            let v = bitcast<f32>(atld_rec(base + c));
            ss += v * v;
        }
    }
    let inv = 1.0 / sqrt(wg_sum(ss, tid) / f32(p.dv) + p.eps);
    for (var c = tid; c < p.dv; c += NT) {
        let v = bitcast<f32>(atld_rec(base + c));
        st_o(base + c, v * inv * ld_w(c) * silu(ld_z(base + c)));
    }
}

@compute @workgroup_size(NT)
fn gdn_batch_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) tid: u32) {
    batch_tile(wid, nwg, tid);
}
