// gdn_rec_tile's inputs (gdn_recurrent_tile.wgsl) for gdn_conv_norm: qkv is the in-projection's
// raw conv channels x [T, C], and q/k/v are causal_conv1d_batch's outputs, computed where they are
// read: channel e of a sequence's token i is silu(sum_j cw[e, j] * xp[i + j, e]) with
// xp = cat(the slot's conv state, the sequence's rows), the same sums in the same order as
// causal_conv1d_batch.wgsl's conv_out, so the same bits. The state a sequence leaves (the last
// K - 1 rows of xp) goes back into its slot once nothing reads the old one: a value channel's by
// the one invocation that reads it (tile_end, after the sequence); a key head's q/k channels,
// which the tiles of all its value heads read, by the last of those tiles to finish
// (conv_handover, called from gdn_conv_norm.wgsl's hand-over: its last_arrival on a counter a
// (row, key head)).
// Bindings (after gdn_batch's): cw [C, K] (read), cpool [N, KM1, C] (f32, read-write). KM1 = K - 1.

const K = KM1 + 1u;

var<private> seq_row: u32;
var<private> seq_cnt: u32;
var<private> seq_slot: u32;
var<private> seq_fresh: bool;
// the state rows of the channels this invocation last convolved (q, k, v): a token's window past
// its first row, which after the sequence's last token is the state the sequence leaves
var<private> keep_q: array<f32, KM1>;
var<private> keep_k: array<f32, KM1>;
var<private> keep_v: array<f32, KM1>;

fn tile_seq(row: u32, cnt: u32, slot: u32, fresh: bool) {
    seq_row = row;
    seq_cnt = cnt;
    seq_slot = slot;
    seq_fresh = fresh;
}

// The window's rows are loaded from both the pool and x at clamped rows and chosen by select:
// no load waits behind a branch or another load, so the conv costs one memory latency, as the
// plain load it replaces.
fn in_x(t: u32, e: u32) -> f32 {
    let i = t - seq_row;
    var wv: array<f32, K>;
    var xv: array<f32, K>;
    for (var j = 0u; j < K; j++) {
        let r = i + j;
        wv[j] = ld_cw(e * K + j);
        let from_pool = ld_cpool((seq_slot * KM1 + min(r, KM1 - 1u)) * p.c + e);
        let from_x = ld_qkv((seq_row + max(r, KM1) - KM1) * p.c + e);
        xv[j] = select(from_x, select(from_pool, 0.0, seq_fresh), r < KM1);
    }
    var s = 0.0;
    for (var j = 0u; j < K; j++) {
        s = fma(wv[j], xv[j], s);
    }
    var keep: array<f32, KM1>;
    for (var r = 0u; r < KM1; r++) {
        keep[r] = xv[r + 1u];
    }
    if (e < p.nk * DK) {
        keep_q = keep;
    } else if (e < 2u * p.nk * DK) {
        keep_k = keep;
    } else {
        keep_v = keep;
    }
    return s / (1.0 + exp(-s));
}

// Channel e's state after the sequence: `keep`, its last token's window past the first row.
fn conv_store(e: u32, keep: array<f32, KM1>) {
    for (var r = 0u; r < KM1; r++) {
        st_cpool((seq_slot * KM1 + r) * p.c + e, keep[r]);
    }
}

fn tile_end(e: u32, own: bool) {
    if (own) {
        conv_store(e, keep_v);
    }
}

// Called by every invocation of the last tile of value head h to finish token row t (past the
// hand-over's acquire): after the sequence's last token, the key head's q/k state, by the tile
// that sees the group's last arrival on the key head's counter (the value head's own tile where
// the group is one head). cnt holds the (row, value head) counters first, then these. Invocation
// tid < DK holds its q and k channels' state from its own reads (gdn_conv_norm.rs asks DK <= NT).
fn conv_handover(t: u32, h: u32, tid: u32) {
    if (t + 1u != seq_row + seq_cnt) {
        return;
    }
    let kh = h / p.group;
    if (p.group > 1u && !last_arrival(p.t * p.nv + t * p.nk + kh, p.group, tid)) {
        return;
    }
    if (tid < DK) {
        conv_store(kh * DK + tid, keep_q);
        conv_store(p.nk * DK + kh * DK + tid, keep_k);
    }
}
