// gdn_batch: the gated delta rule over a packed batch of sequences, each with its recurrent state
// in a slot of a pool (Qwen3.5's linear-attention layers in the batched engine). One workgroup per
// (sequence, value head h, tile of TJ value columns), running gdn_rec_tile
// (gdn_recurrent_tile.wgsl) over the sequence's tokens with its slot's state, in place: the
// workgroup reads its state tile into registers before its first token and writes it back after
// its last, and no other workgroup touches that tile. Every token, prefill chunk or decode, takes
// this recurrent form, so a token's bits depend only on its sequence's earlier tokens: not on the
// other sequences of the batch, nor on where the scheduler cut the prompt into chunks.
// seqs [S, 4] per sequence: first row, token count, state slot, fresh (1: start from zero, the
// slot not read). A sequence whose rows pass T or whose slot passes the pool is skipped (the
// engine checks descriptors before upload: op::check_state_batch).
// Bindings: qkv, b, a, a_log, dt_bias, seqs (u32) (read), o, state (f32 pool, read-write).
// Constants: DK, NT, TJ, RMAX as gdn_recurrent. After gdn_tile_in.wgsl and gdn_tile_out.wgsl (qkv
// and o as they are), or before gdn_conv_norm's hooks (qkv through the conv in gdn_tile_conv.wgsl
// or as it is, o normed in gdn_conv_norm.wgsl: that op's own entry over batch_tile).

struct Params {
    offs: array<vec4<u32>, 4>,  // gdn_batch binds 8 tensors, gdn_conv_norm 14
    t: u32,          // rows of the batch
    nk: u32,
    nv: u32,
    dk: u32,
    dv: u32,
    c: u32,          // qkv row width: 2 * nk * dk + nv * dv
    group: u32,      // nv / nk
    ntiles: u32,     // ceil(dv / TJ)
    s: u32,          // sequences
    slots: u32,      // slots of the pool
    eps: f32,        // gdn_conv_norm's: the norm's epsilon
    _pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn st_state_out(i: u32, v: f32) {
    st_state(i, v);
}

@compute @workgroup_size(NT)
fn gdn_batch(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) tid: u32) {
    batch_tile(wid, nwg, tid);
}

// The entry's body (gdn_conv_norm.wgsl's too): the workgroup's (sequence, head, tile).
fn batch_tile(wid: vec3<u32>, nwg: vec3<u32>, tid: u32) {
    let idx = group_index(wid, nwg);
    let per_seq = p.nv * p.ntiles;
    if (idx >= p.s * per_seq) {
        return;
    }
    let sq = idx / per_seq;
    let h = (idx % per_seq) / p.ntiles;
    let row = ld_seqs(sq * 4u);
    let cnt = ld_seqs(sq * 4u + 1u);
    let slot = ld_seqs(sq * 4u + 2u);
    let fresh = ld_seqs(sq * 4u + 3u) != 0u;
    if (row > p.t || cnt > p.t - row || slot >= p.slots) {
        return;
    }
    tile_seq(row, cnt, slot, fresh);
    gdn_rec_tile(h, idx % p.ntiles, tid, row, cnt, (slot * p.nv + h) * DK * p.dv, fresh);
}
