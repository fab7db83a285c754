// The key-block loop of prefill attention (flash-attention style, f32 math), used by
// attention_prefill (attention_prefill.wgsl) and gated_attention_prefill
// (gated_attention_prefill.wgsl); attention.rs and gated_attention.rs put it in front of the
// kernel. One workgroup of NT threads per (block of BQ queries, query head h): query t sits at
// position n_past + t and sees keys 0..=n_past + t; query head h reads kv head h / group. With
// HG > 1 (a kv group's heads paired, attention.rs PAIR_TILE) the BQ tile rows are HG heads' blocks
// of BQH = BQ / HG queries (row_block), all of one kv head, so they share each staged key block.
//
// The Q tile is staged in q_s (prefill_stage_q; HG > 1: each thread reads its rows' queries into
// registers, row_q, and there is no q_s). Key blocks of BK rows are walked up to the last
// key the block's last valid query sees (kv_end); per block:
//   1. stage K into kv_s (the kernel's prefill_stage_k; rows >= kv_end are zeros: the cache past
//      n_past + T is never read)
//   2. S = Q K^T: thread (ti, tj) holds scores s{a}_{c} of rows ti + a RT and keys tj + c CT in
//      registers; causal mask -> NEG (only on blocks that reach past the first row's position)
//   3. online softmax in parallel: each row's max over its CT threads (subgroup shuffles in the
//      `sg` variant, else through red_s), then p = exp(s - max) into p_s (transposed, so step 5
//      reads four rows as one vec4) and the row's rescale alpha into a_s; every thread keeps
//      running max m{a} and a partial sum l{a} over its own keys (summed over the row at the end)
//   4. stage V into the same buffer (prefill_stage_v)
//   5. O = O * alpha + P V: thread (pr, pc) owns rows 4 pr .. 4 pr + 3 and vec4 columns
//      pc + v CV in registers o{i}_{v}
// The register tiles are straight-line code over scalars that attention_prefill.rs generates into
// the `//@` lines (naga does not unroll loops; arrays indexed in loops would sit in local
// memory): the P.V keys unrolled whole, the score's head_dim loop by up to 4 vec4s a trip. Rows of q_s, kv_s and p_s are padded by one vec4 against bank conflicts.
// The kernel gives Params p (t, hq, group, dh, nqb, ...) and
//   fn prefill_n_past(tid: u32) -> u32                      the first query's position (a
//      workgroup-uniform value: every thread calls it once, before the loop's barriers)
//   fn prefill_q(b: QBlock, i: u32, d4: u32) -> vec4<f32>   vec4 d4 of query row i of the block
//   fn prefill_stage_k(tid: u32, k0: u32, b: QBlock)         key rows k0..k0 + BK into kv_s
//   fn prefill_stage_v(tid: u32, k0: u32, b: QBlock)         value rows likewise
//   fn prefill_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>)  store vec4 d4 of output row i
// and, where KP > 0 (a partition's rows go to a scratch for the merge, attention.rs):
//   fn prefill_part_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>)  prefill_out's, to the scratch
//   fn prefill_stats(b: QBlock, i: u32, m: f32, l: f32)  row i's max score and softmax sum there
// Constants (attention_prefill.rs): DH4 (head_dim / 4), BQ, BK, NT, CT (threads across the keys
// of a score row; a power of two, within one subgroup in the `sg` variant), RT = NT / CT,
// CV = NT / (BQ / 4) (threads across output vec4 columns).
// KP: keys a partition (0: none; else a multiple of BK). A partition's rows are normalized over
// its own keys; a row wholly past a partition's keys (every score masked) comes out finite but
// meaningless, and the merge never reads it. The partitions a block gets are counted from the
// host's Params.n_past (prefill_parts), which the grid is sized by. The paged kernel's position
// comes from seqs and its Params.n_past is a bound on it (the block table's length in keys, less
// T): partitions past a block's keys do nothing, and should the keys reach past the grid's count,
// its last partition takes the rest.

const NEG = -1.0e30;            // masked score; exp(NEG - m) == 0 for any real m
const BQH = BQ / HG;            // query rows a head: a workgroup's tile rows are HG heads' rows
const QS = DH4 + 1u;            // padded row stride (vec4) of q_s and kv_s
const PS = BQ / 4u + 1u;        // padded row stride (vec4) of p_s

//@q_s
var<workgroup> kv_s: array<vec4<f32>, BK * QS>;
// p_s[j * PS + i / 4][i % 4]: p of key j, row i
var<workgroup> p_s: array<vec4<f32>, BK * PS>;
// per row (vec4 of four rows): this block's alpha, at the end 1 / (softmax sum)
var<workgroup> a_s: array<vec4<f32>, BQ / 4u>;
#ifdef_sg
#else_sg
// the partial maxima (then sums) of a row's CT threads
var<workgroup> red_s: array<f32, BQ * CT>;
#endif_sg

// One workgroup's query block: head h, its kv head's row offset kbase, query rows t0..t0 + tn at
// positions pos0.., keys 0..kv_end, of which it walks k_lo..k_hi (all of them, or key partition
// part: KP > 0).
struct QBlock {
    h: u32,
    kbase: u32,
    t0: u32,
    tn: u32,
    pos0: u32,
    kv_end: u32,
    part: u32,
    k_lo: u32,
    k_hi: u32,
}

// Key partitions a query block's keys take: with KP > 0 (attention_parts.rs: a long prefill),
// keys 0..p.n_past + T in runs of KP, each run its own workgroup, merged by
// attention_prefill_merge.wgsl; else 1.
fn prefill_parts() -> u32 {
    return select(1u, (p.n_past + p.t + KP - 1u) / max(KP, 1u), KP > 0u);
}

// The block of workgroup idx < nqb * hq * prefill_parts, the first query at position n_past; the
// longest (last) query blocks start first, their partitions side by side. A partition past the
// block's keys has k_lo >= kv_end (its workgroup does nothing).
fn q_block(idx: u32, n_past: u32) -> QBlock {
    let np = prefill_parts();
    let part = idx % np;
    let qh = idx / np;
    let hgs = p.hq / HG;                // workgroups a query block (HG heads each)
    let qb = p.nqb - 1u - qh / hgs;
    let h = (qh % hgs) * HG;
    let t0 = qb * BQH;
    let tn = min(BQH, p.t - t0);        // valid query rows a head in this block
    let pos0 = n_past + t0;             // position of row 0
    let kv_end = pos0 + tn;
    var k_lo = 0u;
    var k_hi = kv_end;
    if (KP > 0u) {
        k_lo = part * KP;
        k_hi = select(min(k_lo + KP, kv_end), kv_end, part + 1u == np);
    }
    return QBlock(h, (h / p.group) * p.dh, t0, tn, pos0, kv_end, part, k_lo, k_hi);
}

// Tile row i's block: row i % BQH of head b.h + i / BQH (HG heads of one kv group a workgroup,
// so that they share each staged key block; HG 1: row i of head b.h).
fn row_block(b: QBlock, i: u32) -> QBlock {
    var c = b;
    c.h = b.h + i / BQH;
    return c;
}

// vec4 d4 of tile row i's query from prefill_q; zeros for a row past the block's tn.
fn row_q(b: QBlock, i: u32, d4: u32) -> vec4<f32> {
    var x = vec4<f32>(0.0);
    if (i % BQH < b.tn) {
        x = prefill_q(row_block(b, i), i % BQH, d4);
    }
    return x;
}

// The Q tile into q_s (tiles that keep their rows' query in registers read row_q instead).
fn prefill_stage_q(tid: u32, b: QBlock) {
//@stage_q
}

// Steps 1-5 over all key blocks, then each thread's output vec4s, divided by the row's softmax
// sum, to prefill_out. Every thread calls it (barriers), after staging q_s. sid is the thread's
// index for the score tile: in the `sg` variant subgroup_id * subgroup_size + lane, so a row's CT
// threads share a subgroup whatever order the device numbers invocations in.
fn prefill_attend(tid: u32, sid: u32, b: QBlock) {
    let ti = sid / CT;
    let tj = sid % CT;
    let pr = tid / CV;
    let pc = tid % CV;
    //@init
    let nkb = (b.k_hi + BK - 1u) / BK;
    for (var kb = b.k_lo / BK; kb < nkb; kb++) {
        let k0 = kb * BK;
        prefill_stage_k(tid, k0, b);
        workgroupBarrier();

        //@score_zero
        //@score
        if (k0 + BK > b.pos0 + 1u) {
            //@mask
        }
        //@row_max
        //@softmax
        workgroupBarrier();

        prefill_stage_v(tid, k0, b);
        workgroupBarrier();

        //@pv_scale
        //@pv
        workgroupBarrier();
    }
    //@row_sum
    workgroupBarrier();
    //@out
}

// The whole of a prefill workgroup: its (query block, head), the Q tile, the kernel's
// `prefill_prepare` (after the Q tile is staged), then the key loop. Both prefill entry points are
// this (sid: prefill_attend).
fn prefill(wid: vec3<u32>, nwg: vec3<u32>, tid: u32, sid: u32) {
    let idx = group_index(wid, nwg);
    let n_past = prefill_n_past(tid);
    if (idx >= p.nqb * p.hq * prefill_parts()) {
        return;
    }
    let b = q_block(idx, n_past);
    if (b.k_lo >= b.kv_end) {
        return;
    }
    prefill_stage_q(tid, b);
    prefill_prepare(tid, b);
    prefill_attend(tid, sid, b);
}
