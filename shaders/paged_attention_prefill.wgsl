// paged_attention's prefill of one sequence without batch invariance (paged_attention_prefill.rs:
// only when the engine runs a lone request, BatchInvariance::Off): attention_prefill.wgsl's tile
// (attention_prefill_loop.wgsl) over the sequence's key rows in a paged pool [NB, BS, Hkv, Dh]
// instead of a contiguous cache. This file gives the loop and the kernel the Params, the first
// query's position (from seqs) and the key rows (paged_pool.wgsl's pool_row); q and o are
// [T, Hq, Dh] as in attention.wgsl.
// The batch is one sequence: seqs [1, 3] = (first query row 0, query count T, kv length), so the
// rows sit at positions kv_len - T .. kv_len. A description that does not hold together (or a
// table too short for kv_len) makes every key NaN, so every output row comes out NaN without a
// read out of place; a block id not in the pool makes that key NaN, and so the rows that see it.
// Bindings: q, k, v (the pools), bt, seqs (read), o (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,     // a bound on the position (the table's keys less T): counts the key partitions
    group: u32,
    scale: f32,
    nqb: u32,
    bs: u32,         // block size: rows per block
    nb: u32,         // blocks in the pool
    mb: u32,         // block-table row length
    _pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// Whether seqs describes this batch (set by prefill_n_past, before any key is read).
var<private> seq_ok: bool;
var<workgroup> past_w: vec2<u32>;

// The first query's position kv_len - T, for the whole workgroup (thread 0 reads seqs).
fn prefill_n_past(tid: u32) -> u32 {
    if (tid == 0u) {
        let start = ld_seqs(0u);
        let cnt = ld_seqs(1u);
        let kv = ld_seqs(2u);
        let ok = start == 0u && cnt == p.t && cnt <= kv && kv <= p.mb * p.bs;
        past_w = vec2<u32>(select(0u, kv - cnt, ok), select(0u, 1u, ok));
    }
    let w = workgroupUniformLoad(&past_w);
    seq_ok = w.y == 1u;
    tbl = 0u;
    return w.x;
}

// The first pool row of the pool block holding staged block k0, where a staged block lies in one
// pool block (PBS a multiple of BK): one table lookup a staged block instead of one a staged vec4 (the
// staging's cost is its instructions, the table loads among them). NO_ROW: a batch seqs does not
// describe, a block id not in the pool, or a block past the keys (not staged).
var<private> blk_base: u32;

fn kv_block(k0: u32, kv_end: u32) {
    if (PBS % BK == 0u) {
        blk_base = NO_ROW;
        if (seq_ok && k0 < kv_end) {
            // any key of the staged block names the pool block; its last in range, as the
            // per-key lookups' last
            blk_base = pool_base(min(k0 + BK, kv_end) - 1u);
        }
    }
}

// Elements off..off + 4 of key row `key` of the k (which == 0u) or v pool; NaN for a key whose
// block is not in the pool, or every key of a batch seqs does not describe.
fn kv_vec(which: u32, key: u32, off: u32) -> vec4<f32> {
    var r = NO_ROW;
    if (PBS % BK == 0u) {
        if (blk_base != NO_ROW) {
            r = blk_base + key % PBS;
        }
    } else if (seq_ok) {
        r = pool_row(key);
    }
    if (r == NO_ROW) {
        return vec4<f32>(bitcast<f32>(nan_bits));
    }
    let i = r * (p.hkv * p.dh) + off;
    if (which == 0u) {
        return ld4_k(i);
    }
    return ld4_v(i);
}
