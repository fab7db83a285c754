// The key-block loop of prefill attention (flash-attention style, f32 math), used by
// attention_prefill (attention_prefill.wgsl) and gated_attention_prefill
// (gated_attention_prefill.wgsl); attention.rs and gated_attention.rs put it in front of the
// kernel. One workgroup of NT threads per (block of BQ queries, query head h): query t sits at
// position n_past + t and sees keys 0..=n_past + t; query head h reads kv head h / group.
//
// The Q tile is staged in q_s (prefill_stage_q). Key blocks of BK rows are walked up to the last
// key the block's last valid query sees (kv_end); per block:
//   1. stage K into kv_s (the kernel's prefill_stage_k; rows >= kv_end are zeros: the cache past
//      n_past + T is never read)
//   2. S = Q K^T: thread (ti, tj) computes a TM x TN micro-tile; causal mask -> NEG
//   3. online softmax, one thread per query row (running max m_s, sum l_s, rescale a_s);
//      meanwhile every thread stages V into the same buffer K used (prefill_stage_v)
//   4. O = O * alpha + P V: thread (pr, pl) owns row pr and vec4 columns pl + k * TPR (registers)
// Rows and columns of the tiles are padded by one (vec4 / f32) against bank conflicts.
// The kernel gives Params p (t, hq, group, dh, n_past, nqb, ...) and
//   fn prefill_q(b: QBlock, i: u32, d4: u32) -> vec4<f32>   vec4 d4 of query row i of the block
//   fn prefill_stage_k(tid: u32, k0: u32, b: QBlock)         key rows k0..k0 + BK into kv_s
//   fn prefill_stage_v(tid: u32, k0: u32, b: QBlock)         value rows likewise
//   fn prefill_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>)  store vec4 d4 of output row i
// Constants: DH4 (head_dim / 4), BQ, BK, TM, TN, NT = (BQ / TM) * (BK / TN).

const NEG = -1.0e30;            // masked score; exp(NEG - m) == 0 for any real m
const QS = DH4 + 1u;            // padded row stride (vec4) of q_s and kv_s
const SS = BK + 1u;             // padded row stride of s_s
const CT = BK / TN;             // threads across keys in the score tile
const RT = BQ / TM;             // threads across queries in the score tile
const TPR = NT / BQ;            // threads per query row in the P.V phase
const NV = (DH4 + TPR - 1u) / TPR;  // output vec4s per thread

var<workgroup> q_s: array<vec4<f32>, BQ * QS>;
var<workgroup> kv_s: array<vec4<f32>, BK * QS>;
var<workgroup> s_s: array<f32, BQ * SS>;
var<workgroup> m_s: array<f32, BQ>;
var<workgroup> l_s: array<f32, BQ>;
var<workgroup> a_s: array<f32, BQ>;

// One workgroup's query block: head h, its kv head's row offset kbase, query rows t0..t0 + tn at
// positions pos0.., keys 0..kv_end.
struct QBlock {
    h: u32,
    kbase: u32,
    t0: u32,
    tn: u32,
    pos0: u32,
    kv_end: u32,
}

// The block of workgroup idx < nqb * hq; the longest (last) query blocks start first.
fn q_block(idx: u32) -> QBlock {
    let qb = p.nqb - 1u - idx / p.hq;
    let h = idx % p.hq;
    let t0 = qb * BQ;
    let tn = min(BQ, p.t - t0);         // valid query rows in this block
    let pos0 = p.n_past + t0;           // position of row 0
    return QBlock(h, (h / p.group) * p.dh, t0, tn, pos0, pos0 + tn);
}

// The Q tile into q_s: rows i < tn from prefill_q, zeros below them.
fn prefill_stage_q(tid: u32, b: QBlock) {
    for (var e = tid; e < BQ * DH4; e += NT) {
        let i = e / DH4;
        let d4 = e % DH4;
        var x = vec4<f32>(0.0);
        if (i < b.tn) {
            x = prefill_q(b, i, d4);
        }
        q_s[i * QS + d4] = x;
    }
}

// Steps 1-4 over all key blocks, then this thread's output vec4s (row tid / TPR, columns
// tid % TPR + k * TPR), divided by the row's softmax sum, to prefill_out. Every thread calls it
// (barriers), after staging q_s.
fn prefill_attend(tid: u32, b: QBlock) {
    if (tid < BQ) {
        m_s[tid] = NEG;
        l_s[tid] = 0.0;
    }
    let ti = tid / CT;
    let tj = tid % CT;
    let pr = tid / TPR;
    let pl = tid % TPR;
    var acc: array<vec4<f32>, NV>;
    let nkb = (b.kv_end + BK - 1u) / BK;
    for (var kb = 0u; kb < nkb; kb++) {
        let k0 = kb * BK;
        prefill_stage_k(tid, k0, b);
        workgroupBarrier();

        var sc: array<f32, TM * TN>;
        for (var d4 = 0u; d4 < DH4; d4++) {
            var kx: array<vec4<f32>, TN>;
            for (var j = 0u; j < TN; j++) {
                kx[j] = kv_s[(tj + j * CT) * QS + d4];
            }
            for (var a = 0u; a < TM; a++) {
                let qx = q_s[(ti + a * RT) * QS + d4];
                for (var j = 0u; j < TN; j++) {
                    sc[a * TN + j] += dot(qx, kx[j]);
                }
            }
        }
        for (var a = 0u; a < TM; a++) {
            let i = ti + a * RT;
            for (var c = 0u; c < TN; c++) {
                let j = tj + c * CT;
                let key = k0 + j;
                var s = sc[a * TN + c];
                if (key >= b.kv_end || key > b.pos0 + i) {
                    s = NEG;
                }
                s_s[i * SS + j] = s;
            }
        }
        workgroupBarrier();

        if (tid < BQ) {
            let m_old = m_s[tid];
            var mx = m_old;
            for (var j = 0u; j < BK; j++) {
                mx = max(mx, s_s[tid * SS + j]);
            }
            var sum = 0.0;
            for (var j = 0u; j < BK; j++) {
                let e = exp(s_s[tid * SS + j] - mx);
                s_s[tid * SS + j] = e;
                sum += e;
            }
            let alpha = exp(m_old - mx);
            m_s[tid] = mx;
            l_s[tid] = l_s[tid] * alpha + sum;
            a_s[tid] = alpha;
        }
        prefill_stage_v(tid, k0, b);
        workgroupBarrier();

        let alpha = a_s[pr];
        for (var k = 0u; k < NV; k++) {
            acc[k] *= alpha;
        }
        for (var j = 0u; j < BK; j++) {
            let pj = s_s[pr * SS + j];
            for (var k = 0u; k < NV; k++) {
                let d4 = pl + k * TPR;
                if (d4 < DH4) {
                    acc[k] += pj * kv_s[j * QS + d4];
                }
            }
        }
        workgroupBarrier();
    }

    if (pr < b.tn) {
        let inv = 1.0 / l_s[pr];
        for (var k = 0u; k < NV; k++) {
            let d4 = pl + k * TPR;
            if (d4 < DH4) {
                prefill_out(b, pr, d4, acc[k] * inv);
            }
        }
    }
}

// The whole of a prefill workgroup: its (query block, head), the Q tile, the kernel's
// `prefill_prepare` (after the Q tile is staged), then the key loop. Both prefill entry points are
// this.
fn prefill(wid: vec3<u32>, nwg: vec3<u32>, tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.nqb * p.hq) {
        return;
    }
    let b = q_block(idx);
    prefill_stage_q(tid, b);
    prefill_prepare(tid, b);
    prefill_attend(tid, b);
}
