// gdn_rec_tile's inputs (gdn_recurrent_tile.wgsl) for gdn_conv_norm: qkv is the in-projection's
// raw conv channels x [T, C], and q/k/v are causal_conv1d_batch's outputs, computed where they are
// read: channel e of a sequence's token i is silu(sum_j cw[e, j] * xp[i + j, e]) with
// xp = cat(the slot's conv state, the sequence's rows), the same sums in the same order as
// causal_conv1d_batch.wgsl's conv_out, so the same bits. The state a sequence leaves (the last
// K - 1 rows of xp) goes back into its slot once nothing reads the old one: a value channel's by
// the one invocation that reads it (tile_end, after the sequence); a key head's q/k channels,
// which the tiles of all its value heads read, by the last of those tiles to finish
// (conv_handover, called from gdn_conv_norm.wgsl's hand-over with a counter a (row, key head)).
// Bindings (after gdn_batch's): cw [C, K] (read), cpool [N, KM1, C] (f32, read-write). KM1 = K - 1.

var<private> seq_row: u32;
var<private> seq_cnt: u32;
var<private> seq_slot: u32;
var<private> seq_fresh: bool;
var<workgroup> arrived_k: u32;

fn tile_seq(row: u32, cnt: u32, slot: u32, fresh: bool) {
    seq_row = row;
    seq_cnt = cnt;
    seq_slot = slot;
    seq_fresh = fresh;
}

// Row r of the sequence's xp, channel e.
fn xp(r: u32, e: u32) -> f32 {
    if (r < KM1) {
        if (seq_fresh) {
            return 0.0;
        }
        return ld_cpool((seq_slot * KM1 + r) * p.c + e);
    }
    return ld_qkv((seq_row + r - KM1) * p.c + e);
}

fn in_x(t: u32, e: u32) -> f32 {
    let i = t - seq_row;
    var s = 0.0;
    for (var j = 0u; j <= KM1; j++) {
        s = fma(ld_cw(e * (KM1 + 1u) + j), xp(i + j, e), s);
    }
    return s / (1.0 + exp(-s));
}

// Channel e's state after the sequence: all read before any is written (in place).
fn conv_keep(e: u32) {
    var keep: array<f32, KM1>;
    for (var r = 0u; r < KM1; r++) {
        keep[r] = xp(seq_cnt + r, e);
    }
    for (var r = 0u; r < KM1; r++) {
        st_cpool((seq_slot * KM1 + r) * p.c + e, keep[r]);
    }
}

fn tile_end(e: u32, own: bool) {
    if (own) {
        conv_keep(e);
    }
}

// Called by every invocation of the last tile of value head h to finish token row t (past the
// hand-over's acquire): after the sequence's last token, the key head's counter; the tile that
// sees the group's last arrival resets it and writes the head's q/k state. cnt holds the
// (row, value head) counters first, then these.
fn conv_handover(t: u32, h: u32, tid: u32) {
    if (t + 1u != seq_row + seq_cnt) {
        return;
    }
    let kh = h / p.group;
    let at = p.t * p.nv + t * p.nk + kh;
    storageBarrier();
    if (tid == 0u) {
        arrived_k = atadd_cnt(at, 1u);
    }
    if (workgroupUniformLoad(&arrived_k) != p.group - 1u) {
        return;
    }
    if (tid == 0u) {
        atst_cnt(at, 0u);
    }
    storageBarrier();
    for (var c = tid; c < 2u * DK; c += NT) {
        conv_keep(select(kh * DK + c, p.nk * DK + kh * DK + c - DK, c >= DK));
    }
}
