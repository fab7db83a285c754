// The key loop of paged_attention (paged_attention_rows.wgsl): one workgroup of NT threads attends
// the G = Hq / Hkv query heads of one kv head of one query row, already scaled in q_s, to keys
// k0..k1 of that row's sequence (one key partition; paged_attention.wgsl), so each K and V row is
// read once for the whole GQA group. Keys are walked from k0 in chunks of CK. Per chunk:
//   0. pool rows: thread j < CK looks up key c0 + j in the block table (prow_s; NO_ROW past the
//      chunk's keys or for a block id not in the pool)
//   1. partial scores: a team of L adjacent lanes shares one key row, lane e reading vec4s
//      e, e + L, e + 2L, ... (a team's load is one contiguous span: coalesced), four loads
//      issued before their products are summed; each K vec4 is dotted with all G heads' q
//   2. scores: thread (key, head) adds the team's L partials in lane order (workgroup memory, not
//      subgroup operations, whose width differs between devices and would change the order)
//   3. per-head chunk max: segments of SEG scores, then thread hh < G folds its head's segments
//      into the running max m_s and the rescale alpha al_s
//   4. probabilities p = exp(s - m) back into sc_s; every thread rescales its shares by its head's
//      alpha, so a head's running max is one value for the whole workgroup
//   5. P.V: thread (r, c4) owns vec4 c4 of all G heads' outputs and the keys j = r (mod R); a V
//      row is read by DH4 adjacent threads (coalesced), four keys' loads in flight (as in step 1,
//      for the registers), each load feeding G accumulators, the sums in key order
// At the end the denominators (per-thread shares, then segments) and the R partial outputs are
// added in workgroup memory in fixed orders and handed over unnormalized, with the running max
// (the kernel divides, or keeps them for the combine). Every order above depends only on DH4, G,
// CK and the keys k0..k1: a row's bits do not depend on the batch (paged_attention.wgsl).
// The kernel gives Params p, ld4_kp, ld4_vp, pool_row / NO_ROW / nan_bits (paged_attention.wgsl) and
//   fn put_part(hh: u32, c4: u32, o: vec4<f32>, m: f32, l: f32)   vec4 c4 of group head hh's
//      output sum o over the keys, their max score m and softmax denominator l (o / l is the
//      attention over these keys alone)
// Constants: DH4 (head_dim / 4, a multiple of 4, at most NT), NT (workgroup size), G (group, at
// least 1), CK (chunk keys, a multiple of SEG and of NT / L), PART (max(G * CK, NT)), HR (heads a
// round of the final output sum: min(PART / NT, NT / DH4)).

const NEG = -1.0e30;     // masked score; exp(NEG - m) == 0 for any real m
const L = 4u;            // lanes per key in the score phase
const KT = NT / L;       // key teams
const KPT = CK / KT;     // keys per team per chunk
const NV = DH4 / L;      // vec4 loads per lane per key
const R = NT / DH4;      // key subsets in the P.V phase
const SEG = 16u;         // scores per max / sum segment
const NSEG = CK / SEG;   // segments per head
const GC = G * CK;       // (head, key) items per chunk
const ITEMS = (GC + NT - 1u) / NT;   // items per thread

var<workgroup> q_s: array<vec4<f32>, G * DH4>;   // group head hh's query at hh * DH4
// step 1's partials: item (key j, head hh) at j * G + hh, lane e in component e (L == 4);
// at the end, HR heads' R partial outputs
var<workgroup> part_s: array<vec4<f32>, PART>;
var<workgroup> sc_s: array<f32, GC>;             // head hh's chunk scores / probabilities at hh * CK
var<workgroup> prow_s: array<u32, CK>;
var<workgroup> seg_s: array<f32, G * NSEG>;
var<workgroup> m_s: array<f32, G>;
var<workgroup> al_s: array<f32, G>;

// The vec4 of the value row at pool row r, column c4 (NaN for a key whose block is not in the pool).
fn paged_value(r: u32, kbase: u32, c4: u32) -> vec4<f32> {
    if (r == NO_ROW) {
        return vec4<f32>(bitcast<f32>(nan_bits));
    }
    return ld4_vp(r * (p.hkv * p.dh) + kbase + c4 * 4u);
}

// Lane e's partial dots of the key row at kb with every head's query, into part_s[slot]: its NV
// vec4s (e, e + L, ...) loaded four (then one) at a time before their products, summed in order
// (four, not eight: with fewer registers a thread, more workgroups run at once, which is worth
// more than the loads a lane keeps in flight).
fn key_partials(kb: u32, e: u32, slot: u32) {
    var acc: array<vec4<f32>, G>;
    var i = 0u;
    for (; i + 4u <= NV; i += 4u) {
        let d = e + i * L;
        let k0 = ld4_kp(kb + d * 4u);
        let k1 = ld4_kp(kb + (d + L) * 4u);
        let k2 = ld4_kp(kb + (d + 2u * L) * 4u);
        let k3 = ld4_kp(kb + (d + 3u * L) * 4u);
        for (var hh = 0u; hh < G; hh++) {
            let q = hh * DH4 + d;
            var a = acc[hh];
            a += q_s[q] * k0;
            a += q_s[q + L] * k1;
            a += q_s[q + 2u * L] * k2;
            a += q_s[q + 3u * L] * k3;
            acc[hh] = a;
        }
    }
    for (; i < NV; i++) {
        let d = e + i * L;
        let k0 = ld4_kp(kb + d * 4u);
        for (var hh = 0u; hh < G; hh++) {
            acc[hh] += q_s[hh * DH4 + d] * k0;
        }
    }
    for (var hh = 0u; hh < G; hh++) {
        let a = acc[hh];
        part_s[slot + hh][e] = (a.x + a.y) + (a.z + a.w);
    }
}

// Segment sums (max, or sum) of sc_s by threads tid < G * NSEG into seg_s.
fn seg_reduce(tid: u32, is_max: bool) {
    if (tid < G * NSEG) {
        var x = select(0.0, NEG, is_max);
        for (var j = tid * SEG; j < tid * SEG + SEG; j++) {
            x = select(x + sc_s[j], max(x, sc_s[j]), is_max);
        }
        seg_s[tid] = x;
    }
}

// softmax(q_s[hh] . K) V for every group head hh over keys k0..k1 (k0 < k1) of the kv head whose
// rows start at kbase, handed to put_part unnormalized. Every thread calls it with the same
// arguments (barriers); q_s is staged.
fn paged_attend(tid: u32, k0: u32, k1: u32, kbase: u32) {
    let team = tid / L;
    let lane = tid % L;
    let r = tid / DH4;
    let c4 = tid % DH4;
    if (tid < G) {
        m_s[tid] = NEG;
    }
    var l: array<f32, ITEMS>;        // this thread's shares of its items' heads' denominators
    var sv: array<f32, ITEMS>;       // its items' scores in the current chunk
    var acc: array<vec4<f32>, G>;    // its share of vec4 c4 of each head's output
    let nchunks = (k1 - k0 + CK - 1u) / CK;
    for (var c = 0u; c < nchunks; c++) {
        let c0 = k0 + c * CK;
        let cnt = min(CK, k1 - c0);
        // 0. pool rows
        if (tid < CK) {
            var pr = NO_ROW;
            if (tid < cnt) {
                pr = pool_row(c0 + tid);
            }
            prow_s[tid] = pr;
        }
        workgroupBarrier();
        // 1. partial scores, team `team` taking keys team, team + KT, ...
        for (var k = 0u; k < KPT; k++) {
            let j = team + k * KT;
            if (j < cnt) {
                let pr = prow_s[j];
                if (pr == NO_ROW) {
                    for (var hh = 0u; hh < G; hh++) {
                        part_s[j * G + hh][lane] = bitcast<f32>(nan_bits);
                    }
                } else {
                    key_partials(pr * (p.hkv * p.dh) + kbase, lane, j * G);
                }
            }
        }
        workgroupBarrier();
        // 2. scores
        for (var it = 0u; it < ITEMS; it++) {
            let item = tid + it * NT;
            if (item < GC) {
                let j = item % CK;
                var s = NEG;
                if (j < cnt) {
                    let v = part_s[j * G + item / CK];
                    s = (v.x + v.y) + (v.z + v.w);
                }
                sv[it] = s;
                sc_s[item] = s;
            }
        }
        workgroupBarrier();
        // 3. per-head max
        seg_reduce(tid, true);
        workgroupBarrier();
        if (tid < G) {
            let m_old = m_s[tid];
            var mx = m_old;
            for (var g = 0u; g < NSEG; g++) {
                mx = max(mx, seg_s[tid * NSEG + g]);
            }
            m_s[tid] = mx;
            al_s[tid] = exp(m_old - mx);
        }
        workgroupBarrier();
        // 4. probabilities, rescaled shares
        for (var it = 0u; it < ITEMS; it++) {
            let item = tid + it * NT;
            if (item < GC) {
                let hh = item / CK;
                let pj = select(0.0, exp(sv[it] - m_s[hh]), item % CK < cnt);
                l[it] = l[it] * al_s[hh] + pj;
                sc_s[item] = pj;
            }
        }
        for (var hh = 0u; hh < G; hh++) {
            acc[hh] *= al_s[hh];
        }
        workgroupBarrier();
        // 5. P.V
        if (r < R) {
            var j = r;
            for (; j + 3u * R < cnt; j += 4u * R) {
                let v0 = paged_value(prow_s[j], kbase, c4);
                let v1 = paged_value(prow_s[j + R], kbase, c4);
                let v2 = paged_value(prow_s[j + 2u * R], kbase, c4);
                let v3 = paged_value(prow_s[j + 3u * R], kbase, c4);
                for (var hh = 0u; hh < G; hh++) {
                    let b = hh * CK + j;
                    var a = acc[hh];
                    a += sc_s[b] * v0;
                    a += sc_s[b + R] * v1;
                    a += sc_s[b + 2u * R] * v2;
                    a += sc_s[b + 3u * R] * v3;
                    acc[hh] = a;
                }
            }
            for (; j < cnt; j += R) {
                let v = paged_value(prow_s[j], kbase, c4);
                for (var hh = 0u; hh < G; hh++) {
                    acc[hh] += sc_s[hh * CK + j] * v;
                }
            }
        }
        workgroupBarrier();
    }

    // denominators: the shares by item, then segment sums
    for (var it = 0u; it < ITEMS; it++) {
        let item = tid + it * NT;
        if (item < GC) {
            sc_s[item] = l[it];
        }
    }
    workgroupBarrier();
    seg_reduce(tid, false);
    workgroupBarrier();
    // outputs, HR heads a round: thread (hh, c4) adds the R partials of vec4 c4 in order
    for (var h0 = 0u; h0 < G; h0 += HR) {
        // (a loop over all G, constant bounds: acc stays in registers once unrolled)
        for (var hh = 0u; hh < G; hh++) {
            if (hh >= h0 && hh < h0 + HR) {
                part_s[(hh - h0) * NT + tid] = acc[hh];
            }
        }
        workgroupBarrier();
        let hh = h0 + tid / DH4;
        if (tid < HR * DH4 && hh < G) {
            var z = 0.0;
            for (var g = 0u; g < NSEG; g++) {
                z += seg_s[hh * NSEG + g];
            }
            var o = vec4<f32>(0.0);
            for (var rr = 0u; rr < R; rr++) {
                o += part_s[(hh - h0) * NT + rr * DH4 + c4];
            }
            put_part(hh, c4, o, m_s[hh], z);
        }
        workgroupBarrier();
    }
}
