// causal_conv1d_batch: causal_conv1d.wgsl's conv + SiLU over a packed batch of sequences, each
// with its conv state (its previous K-1 inputs, oldest first) in a slot of a pool
// [N, K-1, C] (f32). seqs [S, 4] per sequence: first row, token count, state slot, fresh (1: the
// state is zero, the slot not read). Two entries, dispatched in this order by one op:
//   causal_conv1d_batch        one item per (row, channel): y = silu(sum_j w[c, j] * xp[i + j, c])
//                              with xp = cat(slot state, the sequence's rows), reading the pool
//   causal_conv1d_batch_state  one item per (sequence, channel): the last K-1 rows of xp back into
//                              the slot, all read into registers before any is written (in place)
// or, where the batch has as many rows as sequences (a decode step), one entry alone:
//   causal_conv1d_batch_steps  one item per (sequence, channel): its rows' outputs one after
//                              another, then the state, as the two entries above compute them
// A row's sum takes the same values in the same order whether its window lies in this chunk or
// reaches into the state (the pool holds the past inputs exactly), so its bits do not depend on
// the batch or the chunking. A sequence whose rows or slot are out of range is skipped.
// Bindings: x, w, seqs (u32) (read), y (write), pool (f32, read-write). Constants: WG, KM1 = K - 1.

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,          // rows of the batch
    c: u32,          // channels
    k: u32,          // kernel size (KM1 + 1)
    s: u32,          // sequences
    slots: u32,      // slots of the pool
    n: u32,          // work items
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

// Descriptor of sequence sq: (row, count, slot, fresh); count 0 when it is out of range.
fn seq_of(sq: u32) -> vec4<u32> {
    let row = ld_seqs(sq * 4u);
    let cnt = ld_seqs(sq * 4u + 1u);
    let slot = ld_seqs(sq * 4u + 2u);
    let ok = row <= p.t && cnt <= p.t - row && slot < p.slots;
    return vec4<u32>(row, select(0u, cnt, ok), slot, ld_seqs(sq * 4u + 3u));
}

// Row r of sequence d's xp = cat(state, its rows), channel ch.
fn xp(d: vec4<u32>, r: u32, ch: u32) -> f32 {
    if (r < KM1) {
        if (d.w != 0u) {
            return 0.0;
        }
        return ld_pool((d.z * KM1 + r) * p.c + ch);
    }
    return ld_x((d.x + r - KM1) * p.c + ch);
}

// Output row i of sequence d, channel ch (the window xp[i .. i + K - 1]), stored at y[g].
fn conv_out(d: vec4<u32>, i: u32, ch: u32, g: u32) {
    var s = 0.0;
    for (var j = 0u; j <= KM1; j++) {
        s = fma(ld_w(ch * p.k + j), xp(d, i + j, ch), s);
    }
    st_y(g, silu(s));
}

// The state sequence d leaves in its slot, channel ch: the last K - 1 rows of xp, all read before
// any is written (in place).
fn conv_state(d: vec4<u32>, ch: u32) {
    var keep: array<f32, KM1>;
    for (var r = 0u; r < KM1; r++) {
        keep[r] = xp(d, d.y + r, ch);
    }
    for (var r = 0u; r < KM1; r++) {
        st_pool((d.z * KM1 + r) * p.c + ch, keep[r]);
    }
}

@compute @workgroup_size(WG)
fn causal_conv1d_batch(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                       @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg) * WG + lid;
    if (g >= p.n) {
        return;
    }
    let r = g / p.c;
    let ch = g % p.c;
    // the sequence holding row r: the last whose first row is <= r (rows are packed in order)
    var lo = 0u;
    var hi = p.s;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (ld_seqs(mid * 4u) <= r) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let d = seq_of(lo);
    if (r < d.x || r >= d.x + d.y) {
        return;
    }
    conv_out(d, r - d.x, ch, g);
}

// Item g of the (sequence, channel) entries: with `outputs`, the sequence's rows' outputs one
// after another, then the state it leaves. The item alone reads and writes that slot's column, so
// the outputs and then the state can be one dispatch.
fn seq_channel(g: u32, outputs: bool) {
    if (g >= p.n) {
        return;
    }
    let d = seq_of(g / p.c);
    let ch = g % p.c;
    if (d.y == 0u) {
        return;
    }
    if (outputs) {
        for (var i = 0u; i < d.y; i++) {
            conv_out(d, i, ch, (d.x + i) * p.c + ch);
        }
    }
    conv_state(d, ch);
}

@compute @workgroup_size(WG)
fn causal_conv1d_batch_state(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                             @builtin(local_invocation_index) lid: u32) {
    seq_channel(group_index(wid, nwg) * WG + lid, false);
}

@compute @workgroup_size(WG)
fn causal_conv1d_batch_steps(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                             @builtin(local_invocation_index) lid: u32) {
    seq_channel(group_index(wid, nwg) * WG + lid, true);
}
