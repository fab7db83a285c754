// Paged attention over a layer's K / V pools [NB, BS, Hkv, Dh]: the Params and addressing shared by
// paged_attention (paged_attention_loop.wgsl + paged_attention_rows.wgsl, then
// paged_attention_combine.wgsl) and paged_gated_attention (paged_decode_attend.wgsl +
// attention_decode_loop.wgsl, then paged_gated_attention.wgsl or paged_gated_attention_kv.wgsl).
// A batch is S sequences whose query rows are packed one after another in q [T, ..]; seqs [S, 3]
// holds each one's first query row, query count and kv length; block_tables [S, MB] its blocks.
// Query i of sequence s sits at position kv_len - q_count + i and sees keys 0..=position; key j
// is pool row block_tables[s][j / BS] * BS + j % BS.
//
// Batch invariance: in paged_gated_attention one workgroup attends one query row and query head to
// exactly its own keys, walked from key 0 in fixed chunks (decode_attend,
// attention_decode_loop.wgsl). In paged_attention one workgroup attends one fixed partition of a
// query row's keys (keys p * PK .. (p + 1) * PK, PK a constant) for all query heads of one kv head
// (paged_attention_loop.wgsl), and a row of several partitions is combined from them in partition
// order (paged_attention_combine.wgsl): a row's partitions depend on its kv length alone, never on
// how many partitions the batch's longest row has. Every reduction's order is fixed by the code
// and the row alone. Nothing in
// a row's arithmetic depends on T, S, the other rows, or where its sequence's rows sit in q: a
// query at position p gives the same bits as a decode step, inside a prefill chunk of any size,
// or next to any other sequences. Keys past a row's position are never read (NaN-filled unused
// pool rows cannot leak in). Contents the host checks (op::check_paged_batch) are guarded here
// only so that nothing is read or written out of place: a row whose description is inconsistent,
// or whose block id is >= NB, comes out NaN.
// Bindings (slot order in the Rust launch) give ld_seqs, ld_bt, ld4_kp, ld4_vp. paged_pool.wgsl
// (key -> pool row) follows this file.

struct Params {
    offs: array<vec4<u32>, 4>,   // 13 bindings (paged_attention_lone_gated.wgsl)
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    group: u32,      // Hq / Hkv
    scale: f32,
    bs: u32,         // block size: rows per block
    nb: u32,         // blocks in the pool
    mb: u32,         // block-table row length
    s: u32,          // sequences
    half: u32,       // rotary_dim / 2 (gated)
    eps: f32,        // q/k norm epsilon (gated)
    t0: u32,         // this dispatch's first query row: rows t0 .. t0 + t (paged_attention)
    np: u32,         // key partitions a row in the grid and the scratch (paged_attention)
    pk: u32,         // keys a partition (paged_attention_lone)
    max_pos: u32,    // cos / sin rows (paged_attention_lone_rope)
    wstride: u32,    // Dh when the q/k norm weight has a row a head, else 0 (the same)
}
@group(0) @binding(0) var<uniform> p: Params;

// A query row's place: sequence s, position pos, and whether its description holds together.
struct Row {
    s: u32,
    pos: u32,
    ok: bool,
}

// The sequence of query row t: the last whose first row is <= t (binary search: the rows are
// packed in order), then its description checked against t and the table length.
fn find_row(t: u32) -> Row {
    var lo = 0u;
    var hi = p.s;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (ld_seqs(mid * 3u) <= t) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let start = ld_seqs(lo * 3u);
    let cnt = ld_seqs(lo * 3u + 1u);
    let kv = ld_seqs(lo * 3u + 2u);
    let ok = start <= t && t - start < cnt && cnt <= kv && kv <= p.mb * p.bs;
    return Row(lo, select(0u, kv - cnt + (t - start), ok), ok);
}

// Row t's (sequence, key count, ok) for the whole workgroup: thread 0 looks it up, every thread
// gets it as a uniform value (the key loop's barriers need a uniform trip count).
var<workgroup> row_w: vec3<u32>;

fn workgroup_row(t: u32, tid: u32) -> vec3<u32> {
    if (tid == 0u) {
        let r = find_row(t);
        row_w = vec3<u32>(r.s, r.pos + 1u, select(0u, 1u, r.ok));
    }
    return workgroupUniformLoad(&row_w);
}
