// paged_attention for a lone decode step (one sequence, one query row; batch invariance off) in
// one dispatch: one workgroup of NT threads per (kv head g, key partition of Params.pk keys)
// attends the G query heads of g over its keys, and where the row has two partitions or more the
// last of g's workgroups to finish combines them. A decode step is a chain of dependent memory
// round trips more than it is bytes, so the kernel is laid out to make few: the description, the
// first chunk's block-table entries and the query load together; then a chunk's key and value
// rows load together (both depend on the table alone); the combine reads every record at once.
// The hand-over: each workgroup stores its record through atomics (device-scope words, which
// skip the non-coherent caches plain loads may hit), passes storageBarrier (a device-scope
// release), and one thread adds 1 to g's counter; the workgroup that sees Nv - 1 there (Nv: the
// partitions holding keys) resets the counter to 0 for the next dispatch, passes storageBarrier
// (the acquire) and reads the records through atomics. No workgroup waits for another.
//   out = (sum_i o_i * exp(m_i - M)) / (sum_i l_i * exp(m_i - M)),   M = max_i m_i
// A row whose description does not hold together comes out NaN, and so does one that meets a block
// id not in the pool. tbl (paged_pool.wgsl) stays 0: the one sequence's table row. The `sg`
// variant (paged_attention_lone.rs: takes_sg) takes each head's running max and denominator by
// subgroup shuffles instead of a barrier and a loop over CK.
// The query comes from a prologue put before this file: paged_attention_lone_q.wgsl (the query as
// given: paged_attention) or paged_attention_lone_rope.wgsl (the q/k norm, RoPE and the cache
// write of the new key and value: rms_norm_rope_kv_attention and paged_gated_attention). Each gives
//   fn front(tid: u32, g: u32)        loads that need nothing but Params (issued with step 1's)
//   fn finish(tid: u32, g: u32, part: u32)   after step 2's loads: q_s final (a barrier at its end)
//   var<private> new_row: u32   the pool row whose key and value are new_k_s / new_v_s (NO_NEW: none)
//   fn gate_out(hh: u32, c4: u32, o: vec4<f32>) -> vec4<f32>   output vec4 c4 of group head hh as
//                               stored (the gated op's sigmoid(gate); else o)
// Bindings: the prologue's, then bt, seqs (read), o (write), sc (atomic words: CW counter words, a
// kv head's at g, then the records; CW is fixed, so no call's records land on another's counters).
// Constants: DH4 (Dh / 4; NT a multiple of it), NT, G (Hq / Hkv), L (lanes a key row in the score
// phase, a multiple of 4 dividing DH4: a lane's key slice is DH4 / L vec4s), CK (= NT / L, keys a
// chunk), CW, OG (heads a round of step 6's sums, dividing G). Record (kv head g, partition k,
// group head hh) at CW + ((g * Np + k) * G + hh) * RS: o[0..Dh], m, l.

const NV = DH4 / L;      // vec4 loads a lane a key
const R = NT / DH4;      // key subsets of the P.V phase (thread (r, c4): keys r, r + R, ...)
const KR = CK / R;       // keys a thread in the P.V phase
const RS = DH4 * 4u + 2u;
const ITEMS = (G * CK + NT - 1u) / NT;   // (head, key) items a thread
const NEG = -1.0e30;
const NO_NEW = 0xfffffffeu;   // neither a pool row nor NO_ROW

var<workgroup> q_s: array<vec4<f32>, G * DH4>;
var<workgroup> prow_s: array<u32, CK>;
const LQ = L / 4u;       // vec4s of lane partials a (key, head)
var<workgroup> part_s: array<vec4<f32>, CK * G * LQ>;   // (key j, head hh): the L lanes' partial dots
var<workgroup> sc_s: array<f32, G * CK>;           // head hh's scores, then probabilities, at hh * CK
var<workgroup> m_s: array<f32, G>;
var<workgroup> al_s: array<f32, G>;
var<workgroup> out_s: array<vec4<f32>, OG * NT>;   // (head h0 + hh, thread t) at hh * NT + t
var<workgroup> seq_w: vec3<u32>;
var<workgroup> count_w: u32;
var<workgroup> new_k_s: array<vec4<f32>, DH4>;
var<workgroup> new_v_s: array<vec4<f32>, DH4>;

// A chunk's key rows (team `team`'s key, lane `lane`'s vec4s) and value rows (thread (r, c4)'s
// keys), in registers: loaded together, before the scores need either.
var<private> kr: array<vec4<f32>, NV>;
var<private> vr: array<vec4<f32>, KR>;

fn load_chunk(tid: u32, cnt: u32, kbase: u32) {
    let team = tid / L;
    let lane = tid % L;
    let r = tid / DH4;
    let c4 = tid % DH4;
    let kp_row = prow_s[team];
    for (var i = 0u; i < NV; i++) {
        var k = vec4<f32>(0.0);
        if (team < cnt) {
            k = vec4<f32>(bitcast<f32>(nan_bits));
            if (kp_row != NO_ROW) {
                k = ld4_kp(kp_row * (p.hkv * p.dh) + kbase + (lane + i * L) * 4u);
            }
        }
        kr[i] = k;
    }
    for (var i = 0u; i < KR; i++) {
        let j = r + i * R;
        var v = vec4<f32>(0.0);
        if (j < cnt) {
            v = vec4<f32>(bitcast<f32>(nan_bits));
            let vrow = prow_s[j];
            if (vrow != NO_ROW) {
                v = ld4_vp(vrow * (p.hkv * p.dh) + kbase + c4 * 4u);
            }
        }
        vr[i] = v;
    }
}

// The rows of the chunk that are the new key and value: theirs instead of the pool's (which the
// prologue writes in this same dispatch).
fn take_new(tid: u32, cnt: u32) {
    let team = tid / L;
    let lane = tid % L;
    let r = tid / DH4;
    let c4 = tid % DH4;
    if (team < cnt && prow_s[team] == new_row) {
        for (var i = 0u; i < NV; i++) {
            kr[i] = new_k_s[lane + i * L];
        }
    }
    for (var i = 0u; i < KR; i++) {
        let j = r + i * R;
        if (j < cnt && prow_s[j] == new_row) {
            vr[i] = new_v_s[c4];
        }
    }
}

// The score of item (head item / CK, key item % CK): its L lanes' partial dots added (NEG past
// the chunk's cnt keys).
fn score(item: u32, cnt: u32) -> f32 {
    let j = item % CK;
    if (j >= cnt) {
        return NEG;
    }
    let at = (j * G + item / CK) * LQ;
    let v = part_s[at];
    var s = (v.x + v.y) + (v.z + v.w);
    for (var q = 1u; q < LQ; q++) {
        let w = part_s[at + q];
        s += (w.x + w.y) + (w.z + w.w);
    }
    return s;
}

// Output vec4 c4 of group head hh (its row at orow + hh * Dh).
fn put_out(orow: u32, hh: u32, c4: u32, o_in: vec4<f32>) {
    let o = gate_out(hh, c4, o_in);
    let at = orow + hh * p.dh + c4 * 4u;
    st2_o(at, o.x, o.y);
    st2_o(at + 2u, o.z, o.w);
}

// Whether the description seqs[0] = (first row, query count, kv length) is a lone decode step's.
fn lone_ok(sq: vec3<u32>) -> bool {
    return sq.x == 0u && sq.y == 1u && sq.y <= sq.z && sq.z <= p.mb * p.bs;
}

fn ld4_rec(r: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(atld_sc(r), atld_sc(r + 1u), atld_sc(r + 2u), atld_sc(r + 3u)));
}

@compute @workgroup_size(NT)
fn paged_attention_lone(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.hkv * p.np) {
        return;
    }
    let part = idx % p.np;
    let g = idx / p.np;
    let orow = g * G * p.dh;   // the group's first query head (query and output rows alike)
    let kbase = g * p.dh;
    let k0 = part * p.pk;
    // 1. the description, the first chunk's pool rows and the queries, loaded together
    if (tid == 0u) {
        seq_w = vec3<u32>(ld_seqs(0u), ld_seqs(1u), ld_seqs(2u));
    }
    if (tid < CK) {
        var pr = NO_ROW;
        if (k0 + tid < p.mb * p.bs) {
            pr = pool_row(k0 + tid);
        }
        prow_s[tid] = pr;
    }
    front(tid, g);
    if (tid < G) {
        m_s[tid] = NEG;
    }
    let sq = workgroupUniformLoad(&seq_w);
    let ok = lone_ok(sq);
    let kv_len = select(0u, sq.z, ok);
    let nv = (kv_len + p.pk - 1u) / p.pk;
    if (!ok) {
        if (part == 0u) {
            finish(tid, g, part);
            for (var d = tid; d < G * p.dh; d += NT) {
                st_o(orow + d, bitcast<f32>(nan_bits));
            }
        }
        return;
    }
    if (part >= nv) {
        return;
    }
    let k1 = min(k0 + p.pk, kv_len);
    let team = tid / L;
    let lane = tid % L;
    let r = tid / DH4;
    load_chunk(tid, min(CK, k1 - k0), kbase);
    finish(tid, g, part);
    var acc: array<vec4<f32>, G>;
    var l_share: array<f32, ITEMS>;   // this thread's items' shares of their heads' denominators
#ifdef_sg
    var m_run: array<f32, ITEMS>;     // their heads' running maxima
    for (var it = 0u; it < ITEMS; it++) {
        m_run[it] = NEG;
    }
#else_sg
    var sv: array<f32, ITEMS>;        // their scores (item tid + it * NT < G * CK)
#endif_sg
    for (var c0 = k0; c0 < k1; c0 += CK) {
        let cnt = min(CK, k1 - c0);
        if (c0 != k0) {
            workgroupBarrier();
            if (tid < CK) {
                var pr = NO_ROW;
                if (c0 + tid < k1) {
                    pr = pool_row(c0 + tid);
                }
                prow_s[tid] = pr;
            }
            workgroupBarrier();
            // 2. this chunk's key and value rows, loaded together (the first chunk's: before
            // finish)
            load_chunk(tid, cnt, kbase);
        }
        take_new(tid, cnt);
        // 3. scores: each lane's partial dots of its key with every head, then a key's four added
        for (var hh = 0u; hh < G; hh++) {
            var a = vec4<f32>(0.0);
            for (var i = 0u; i < NV; i++) {
                a += q_s[hh * DH4 + lane + i * L] * kr[i];
            }
            part_s[(team * G + hh) * LQ + lane / 4u][lane % 4u] = (a.x + a.y) + (a.z + a.w);
        }
        workgroupBarrier();
#ifdef_sg
        // 3b-4. a head's CK items are CK consecutive invocations of one subgroup (takes_sg):
        // its maximum by shuffles, no barrier
        for (var it = 0u; it < ITEMS; it++) {
            let item = tid + it * NT;
            var s = NEG;
            if (item < G * CK) {
                s = score(item, cnt);
            }
            var mx = s;
            for (var d = CK / 2u; d > 0u; d >>= 1u) {
                mx = max(mx, subgroupShuffleXor(mx, d));
            }
            if (item < G * CK) {
                let hh = item / CK;
                let m_old = m_run[it];
                let m_new = max(m_old, mx);
                let al = exp(m_old - m_new);
                let pj = select(0.0, exp(s - m_new), item % CK < cnt);
                l_share[it] = l_share[it] * al + pj;
                m_run[it] = m_new;
                sc_s[item] = pj;
                if (item % CK == 0u) {
                    m_s[hh] = m_new;
                    al_s[hh] = al;
                }
            }
        }
#else_sg
        for (var it = 0u; it < ITEMS; it++) {
            let item = tid + it * NT;
            if (item < G * CK) {
                let s = score(item, cnt);
                sv[it] = s;
                sc_s[item] = s;
            }
        }
        workgroupBarrier();
        // 4. each head's running max and the rescale of what came before
        if (tid < G) {
            let m_old = m_s[tid];
            var m4 = vec4<f32>(m_old);
            for (var j = tid * CK; j < tid * CK + CK; j += 4u) {
                m4 = max(m4, vec4<f32>(sc_s[j], sc_s[j + 1u], sc_s[j + 2u], sc_s[j + 3u]));
            }
            let mx = max(max(m4.x, m4.y), max(m4.z, m4.w));
            m_s[tid] = mx;
            al_s[tid] = exp(m_old - mx);
        }
        workgroupBarrier();
        for (var it = 0u; it < ITEMS; it++) {
            let item = tid + it * NT;
            if (item < G * CK) {
                let hh = item / CK;
                let pj = select(0.0, exp(sv[it] - m_s[hh]), item % CK < cnt);
                l_share[it] = l_share[it] * al_s[hh] + pj;
                sc_s[item] = pj;
            }
        }
#endif_sg
        workgroupBarrier();
        // 5. P.V from the value rows in registers
        for (var hh = 0u; hh < G; hh++) {
            var a = acc[hh] * al_s[hh];
            for (var i = 0u; i < KR; i++) {
                a += sc_s[hh * CK + r + i * R] * vr[i];
            }
            acc[hh] = a;
        }
    }
    // 6. the heads' R partial outputs and denominator shares; a thread a (head, column) adds them
    workgroupBarrier();
    for (var it = 0u; it < ITEMS; it++) {
        let item = tid + it * NT;
#ifdef_sg
        var l = select(0.0, l_share[it], item < G * CK);
        for (var d = CK / 2u; d > 0u; d >>= 1u) {
            l += subgroupShuffleXor(l, d);
        }
        if (item < G * CK && item % CK == 0u) {
            sc_s[item / CK] = l;
        }
#else_sg
        if (item < G * CK) {
            sc_s[item] = l_share[it];
        }
#endif_sg
    }
    let single = nv == 1u;
    for (var h0 = 0u; h0 < G; h0 += OG) {
        if (h0 != 0u) {
            workgroupBarrier();
        }
        for (var hh = 0u; hh < OG; hh++) {
            out_s[hh * NT + tid] = acc[h0 + hh];
        }
        workgroupBarrier();
        for (var it = tid; it < OG * DH4; it += NT) {
            let hh = h0 + it / DH4;
            let c4 = it % DH4;
            var o = vec4<f32>(0.0);
            for (var rr = 0u; rr < R; rr++) {
                o += out_s[(it / DH4) * NT + rr * DH4 + c4];
            }
#ifdef_sg
            let l = sc_s[hh];
#else_sg
            var l4 = vec4<f32>(0.0);
            for (var j = hh * CK; j < hh * CK + CK; j += 4u) {
                l4 += vec4<f32>(sc_s[j], sc_s[j + 1u], sc_s[j + 2u], sc_s[j + 3u]);
            }
            let l = (l4.x + l4.y) + (l4.z + l4.w);
#endif_sg
            if (single) {
                put_out(orow, hh, c4, o / l);
            } else {
                let rec = CW + ((g * p.np + part) * G + hh) * RS;
                for (var e = 0u; e < 4u; e++) {
                    atst_sc(rec + c4 * 4u + e, bitcast<u32>(o[e]));
                }
                if (c4 == 0u) {
                    atst_sc(rec + p.dh, bitcast<u32>(m_s[hh]));
                    atst_sc(rec + p.dh + 1u, bitcast<u32>(l));
                }
            }
        }
    }
    if (single) {
        return;
    }
    // 7. the hand-over; the last workgroup of g combines the Nv records of each head
    storageBarrier();
    if (tid == 0u) {
        count_w = atadd_sc(g, 1u);
    }
    if (workgroupUniformLoad(&count_w) != nv - 1u) {
        return;
    }
    if (tid == 0u) {
        atst_sc(g, 0u);
    }
    storageBarrier();
    for (var it = tid; it < G * DH4; it += NT) {
        let hh = it / DH4;
        let cc = it % DH4;
        let r0 = CW + (g * p.np * G + hh) * RS;
        var mx = NEG;
        var o = vec4<f32>(0.0);
        var l = 0.0;
        // online over the records, four loaded before their values are used
        var k = 0u;
        for (; k < nv; k += 4u) {
            var ms: array<f32, 4>;
            var ls: array<f32, 4>;
            var os: array<vec4<f32>, 4>;
            for (var u = 0u; u < 4u; u++) {
                let rr = r0 + min(k + u, nv - 1u) * G * RS;
                ms[u] = bitcast<f32>(atld_sc(rr + p.dh));
                ls[u] = bitcast<f32>(atld_sc(rr + p.dh + 1u));
                os[u] = ld4_rec(rr + cc * 4u);
            }
            for (var u = 0u; u < 4u; u++) {
                if (k + u < nv) {
                    let nm = max(mx, ms[u]);
                    let a = exp(mx - nm);
                    let b = exp(ms[u] - nm);
                    o = o * a + os[u] * b;
                    l = l * a + ls[u] * b;
                    mx = nm;
                }
            }
        }
        put_out(orow, hh, cc, o / l);
    }
}
