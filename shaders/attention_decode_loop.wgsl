// The key loop of decode attention, used by attention_decode (attention_decode.wgsl) and
// gated_attention_decode (gated_attention_decode.wgsl); attention.rs and gated_attention.rs put it
// in front of the kernel. One workgroup of NT threads attends one query, already scaled in q_s, to
// keys 0..kv_len, walked in chunks of NT (one key per thread). Per chunk:
//   1. scores: thread j dots q_s with key c0 + j (the kernel's decode_score)
//   2. chunk max: two-level reduction (NG groups of GS) in workgroup memory
//   3. probabilities p_j = exp(s_j - m) back into sc_s; every thread rescales by the same alpha,
//      so the running max m is one value for the whole workgroup (no per-thread rescale later)
//   4. P.V: thread (r, c4) owns vec4 c4 of the output and the keys j = r (mod R) of the chunk;
//      a V row (the kernel's decode_value) is read by DH4 adjacent threads (coalesced), eight
//      keys' rows loaded before they are summed
// At the end the R partial outputs and the NT partial sums are added in workgroup memory.
// The kernel gives Params p (hkv, dh, ...), fn ld4_key(i: u32) -> vec4<f32> (four key elements from
// element i, for key_dot) and
//   fn decode_score(key: u32, kbase: u32) -> f32               q_s . key row `key` of kv head kbase
//   fn decode_value(key: u32, kbase: u32, c4: u32) -> vec4<f32>  vec4 c4 of that value row
// Constants: DH4 (head_dim / 4), NT (workgroup size, DH4 <= NT).

const NEG = -1.0e30;     // masked score; exp(NEG - m) == 0 for any real m
const R = NT / DH4;      // key subsets in the P.V phase
const NG = 16u;          // reduction groups
const GS = NT / NG;      // scores per reduction group

var<workgroup> q_s: array<vec4<f32>, DH4>;
var<workgroup> sc_s: array<f32, NT>;
var<workgroup> red_s: array<f32, NG>;
var<workgroup> acc_s: array<vec4<f32>, NT>;

// q_s . the key row starting at kb, read through the kernel's ld4_key: eight vec4 loads issued
// before their sums (a thread waits on one round trip for eight, not one each), the sums in d4
// order.
fn key_dot(kb: u32) -> f32 {
    var dot = vec4<f32>(0.0);
    var d4 = 0u;
    for (; d4 + 7u < DH4; d4 += 8u) {
        let k0 = ld4_key(kb + d4 * 4u);
        let k1 = ld4_key(kb + (d4 + 1u) * 4u);
        let k2 = ld4_key(kb + (d4 + 2u) * 4u);
        let k3 = ld4_key(kb + (d4 + 3u) * 4u);
        let k4 = ld4_key(kb + (d4 + 4u) * 4u);
        let k5 = ld4_key(kb + (d4 + 5u) * 4u);
        let k6 = ld4_key(kb + (d4 + 6u) * 4u);
        let k7 = ld4_key(kb + (d4 + 7u) * 4u);
        dot += q_s[d4] * k0;
        dot += q_s[d4 + 1u] * k1;
        dot += q_s[d4 + 2u] * k2;
        dot += q_s[d4 + 3u] * k3;
        dot += q_s[d4 + 4u] * k4;
        dot += q_s[d4 + 5u] * k5;
        dot += q_s[d4 + 6u] * k6;
        dot += q_s[d4 + 7u] * k7;
    }
    for (; d4 < DH4; d4++) {
        dot += q_s[d4] * ld4_key(kb + d4 * 4u);
    }
    return dot.x + dot.y + dot.z + dot.w;
}

// softmax(q_s . K) V over keys 0..kv_len of the kv head whose rows start at kbase: output vec4 tid
// for tid < DH4 (zeros for the other threads). Every thread calls it (barriers); q_s is staged.
fn decode_attend(tid: u32, kv_len: u32, kbase: u32) -> vec4<f32> {
    let r = tid / DH4;
    let c4 = tid % DH4;
    var m = NEG;
    var l = 0.0;                 // this thread's share of the softmax denominator
    var acc = vec4<f32>(0.0);    // this thread's share of output vec4 c4
    let nchunks = (kv_len + NT - 1u) / NT;
    for (var c = 0u; c < nchunks; c++) {
        let c0 = c * NT;
        let cnt = min(NT, kv_len - c0);
        var s = NEG;
        if (tid < cnt) {
            s = decode_score(c0 + tid, kbase);
        }
        sc_s[tid] = s;
        workgroupBarrier();
        if (tid < NG) {
            var mx = NEG;
            for (var j = tid * GS; j < tid * GS + GS; j++) {
                mx = max(mx, sc_s[j]);
            }
            red_s[tid] = mx;
        }
        workgroupBarrier();
        var cmax = NEG;
        for (var g = 0u; g < NG; g++) {
            cmax = max(cmax, red_s[g]);
        }
        let m_new = max(m, cmax);
        let alpha = exp(m - m_new);
        m = m_new;
        let pj = select(0.0, exp(s - m_new), tid < cnt);
        l = l * alpha + pj;
        acc *= alpha;
        sc_s[tid] = pj;
        workgroupBarrier();
        if (r < R) {
            // eight keys' value loads issued before their sums (a thread waits on one round trip
            // for eight keys, not one a key); the sums stay in key order
            var j = r;
            for (; j + 7u * R < cnt; j += 8u * R) {
                let v0 = decode_value(c0 + j, kbase, c4);
                let v1 = decode_value(c0 + j + R, kbase, c4);
                let v2 = decode_value(c0 + j + 2u * R, kbase, c4);
                let v3 = decode_value(c0 + j + 3u * R, kbase, c4);
                let v4 = decode_value(c0 + j + 4u * R, kbase, c4);
                let v5 = decode_value(c0 + j + 5u * R, kbase, c4);
                let v6 = decode_value(c0 + j + 6u * R, kbase, c4);
                let v7 = decode_value(c0 + j + 7u * R, kbase, c4);
                acc += sc_s[j] * v0;
                acc += sc_s[j + R] * v1;
                acc += sc_s[j + 2u * R] * v2;
                acc += sc_s[j + 3u * R] * v3;
                acc += sc_s[j + 4u * R] * v4;
                acc += sc_s[j + 5u * R] * v5;
                acc += sc_s[j + 6u * R] * v6;
                acc += sc_s[j + 7u * R] * v7;
            }
            for (; j < cnt; j += R) {
                acc += sc_s[j] * decode_value(c0 + j, kbase, c4);
            }
        }
        workgroupBarrier();
    }

    sc_s[tid] = l;
    acc_s[tid] = acc;
    workgroupBarrier();
    if (tid < NG) {
        var sum = 0.0;
        for (var j = tid * GS; j < tid * GS + GS; j++) {
            sum += sc_s[j];
        }
        red_s[tid] = sum;
    }
    workgroupBarrier();
    var o = vec4<f32>(0.0);
    if (tid < DH4) {
        var z = 0.0;
        for (var g = 0u; g < NG; g++) {
            z += red_s[g];
        }
        for (var rr = 0u; rr < R; rr++) {
            o += acc_s[rr * DH4 + tid];
        }
        o = o / z;
    }
    return o;
}
