// gdn_conv_norm: gdn_batch (gdn_batch.wgsl's entry body, `batch_tile`, the same tiles and
// recurrence) over the conv's outputs (gdn_tile_conv.wgsl computes them where they are read and
// writes the conv state back; or, past gdn_conv_inside_max sequences, gdn_tile_in.wgsl reads them
// from the conv's own dispatch) with Qwen3.5's gated RMSNorm per value head read after it, for a
// decode batch (one token a sequence, invariance off; gdn_conv_norm.rs runs the composition for
// every other batch):
//   y = o / sqrt(mean(o^2) + eps) * w * silu(z),  taken as inv * (o * w * silu(z))
// Each tile, for its columns c, loads w[c] and z[c] before the token (tile_pre), then stores
// g = o * w * silu(z) and the sum of its columns' o^2 (summed by one invocation in column order).
// The norm needs every tile's sum, which the head's ntiles workgroups hand over as
// paged_attention_lone's records: stores through atomics (device-scope words, which skip the
// non-coherent caches plain loads may hit), storageBarrier (a device-scope release), and one
// thread adds 1 to the (row, head)'s counter in `cnt`; the workgroup that sees ntiles - 1 there
// resets the counter to 0 for the next dispatch, passes storageBarrier (the acquire), and with
// the sums (in tile order) stores y = g * inv for the whole row, then passes the row to the conv
// state's hand-over (conv_handover). No workgroup waits for another.
// Bindings: qkv, b, a, a_log, dt_bias, seqs, z, w, cw (read), o (y), state, cpool (read-write)
// (cw and cpool with gdn_tile_conv.wgsl only), then cnt (atomic words, one a (row, value head) then one a (row, key head), zero between
// dispatches) and rec (atomic words: g's f32 bits [T, nv, dv], then the tiles' sums
// [T, nv, ntiles]).

var<workgroup> arrived: u32;
var<workgroup> sq: array<f32, TJ>;
var<private> w_c: f32;
var<private> z_c: f32;

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

// Whether this workgroup is the last of n to arrive at counter `at` of cnt: storageBarrier (the
// release of what it stored and read), one thread's add; the last resets the counter to 0 for the
// next dispatch and passes storageBarrier again (the acquire). Every invocation calls it; the
// barriers between two calls keep `arrived` from being overwritten before all have read it.
fn last_arrival(at: u32, n: u32, tid: u32) -> bool {
    storageBarrier();
    if (tid == 0u) {
        arrived = atadd_cnt(at, 1u);
    }
    if (workgroupUniformLoad(&arrived) != n - 1u) {
        return false;
    }
    if (tid == 0u) {
        atst_cnt(at, 0u);
    }
    storageBarrier();
    return true;
}

fn tile_pre(i: u32, jj: u32, own: bool) {
    if (own) {
        w_c = ld_w(jj);
        z_c = ld_z(i);
    }
}

fn tile_out(i: u32, jj: u32, os: f32, own: bool, tid: u32) {
    let hd = (i - jj) / p.dv;   // (row, head) of this token: i - jj is its row of o's start
    if (tid < TJ) {
        sq[tid] = select(0.0, os * os, own);
    }
    if (own) {
        atst_rec(i, bitcast<u32>(os * w_c * silu(z_c)));
    }
    workgroupBarrier();
    if (tid == 0u) {
        var ss = 0.0;
        for (var c = 0u; c < TJ; c++) {
            ss += sq[c];
        }
        atst_rec(p.t * p.nv * p.dv + hd * p.ntiles + jj / TJ, bitcast<u32>(ss));
    }
    if (!last_arrival(hd, p.ntiles, tid)) {
        return;
    }
    var g: array<f32, GMAX>;
    for (var k = 0u; k < GMAX; k++) {
        let c = tid + k * NT;
        if (c < p.dv) {
            g[k] = bitcast<f32>(atld_rec(hd * p.dv + c));
        }
    }
    var ss = 0.0;
    for (var k = 0u; k < p.ntiles; k++) {
        ss += bitcast<f32>(atld_rec(p.t * p.nv * p.dv + hd * p.ntiles + k));
    }
    let inv = 1.0 / sqrt(ss / f32(p.dv) + p.eps);
    for (var k = 0u; k < GMAX; k++) {
        let c = tid + k * NT;
        if (c < p.dv) {
            st_o(hd * p.dv + c, g[k] * inv);
        }
    }
    conv_handover(hd / p.nv, hd % p.nv, tid);
}

@compute @workgroup_size(NT)
fn gdn_conv_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) tid: u32) {
    batch_tile(wid, nwg, tid);
}
