// Decode attention: one workgroup per (query t, query head h); T is usually 1.
// Query t sits at position n_past + t and sees keys 0..kv_len, kv_len = n_past + t + 1.
// Query head h reads kv head h / group.
//
// Keys are walked in chunks of NT (one key per thread). Per chunk:
//   1. scores: thread j dots the scaled q (workgroup memory) with key c0 + j (global, vec4 loads)
//   2. chunk max: two-level reduction (NG groups of GS) in workgroup memory
//   3. probabilities p_j = exp(s_j - m) back into sc_s; every thread rescales by the same alpha,
//      so the running max m is one value for the whole workgroup (no per-thread rescale later)
//   4. P.V: thread (r, c4) owns vec4 c4 of the output and the keys j = r (mod R) of the chunk;
//      a V row is read by DH4 adjacent threads (coalesced)
// At the end the R partial outputs and the NT partial sums are added in workgroup memory.
// Bindings: q, k, v (read), o (write). Constants: DH4 (head_dim / 4), NT (workgroup size).
// ld4_q / ld4_k / ld4_v (four elements -> vec4<f32>) are generated per dtype by attention.rs.

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    n_past: u32,
    group: u32,
    scale: f32,
    nqb: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

const NEG = -1.0e30;     // masked score; exp(NEG - m) == 0 for any real m
const R = NT / DH4;      // key subsets in the P.V phase
const NG = 16u;          // reduction groups
const GS = NT / NG;      // scores per reduction group

var<workgroup> q_s: array<vec4<f32>, DH4>;
var<workgroup> sc_s: array<f32, NT>;
var<workgroup> red_s: array<f32, NG>;
var<workgroup> acc_s: array<vec4<f32>, NT>;

@compute @workgroup_size(NT)
fn attention_decode(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) tid: u32) {
    let idx = group_index(wid, nwg);
    if (idx >= p.t * p.hq) {
        return;
    }
    let t = idx / p.hq;
    let h = idx % p.hq;
    let kbase = (h / p.group) * p.dh;   // kv head's offset within a cache row
    let kstride = p.hkv * p.dh;         // elements per cache row
    let kv_len = p.n_past + t + 1u;
    let qrow = (t * p.hq + h) * p.dh;

    for (var d4 = tid; d4 < DH4; d4 += NT) {
        q_s[d4] = ld4_q(qrow + d4 * 4u) * p.scale;
    }
    workgroupBarrier();

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
            let kb = (c0 + tid) * kstride + kbase;
            var dot = vec4<f32>(0.0);
            for (var d4 = 0u; d4 < DH4; d4++) {
                dot += q_s[d4] * ld4_k(kb + d4 * 4u);
            }
            s = dot.x + dot.y + dot.z + dot.w;
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
            let vb = c0 * kstride + kbase + c4 * 4u;
            for (var j = r; j < cnt; j += R) {
                acc += sc_s[j] * ld4_v(vb + j * kstride);
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
    if (tid < DH4) {
        var z = 0.0;
        for (var g = 0u; g < NG; g++) {
            z += red_s[g];
        }
        var o = vec4<f32>(0.0);
        for (var rr = 0u; rr < R; rr++) {
            o += acc_s[rr * DH4 + tid];
        }
        o = o / z;
        st2_o(qrow + tid * 4u, o.x, o.y);
        st2_o(qrow + tid * 4u + 2u, o.z, o.w);
    }
}
