// layer_bridge: a lone decode step from one layer's attention output to the next layer's q/k/v
// projection in one dispatch, its four projections as phases the workgroups meet between at grid
// barriers (layer_bridge.rs; the op's composition in op/mod.rs):
//   o = att Woᵀ;  x2 = x + o;  g = swiglu pairs of (rms_norm(x2, pnw) Wguᵀ);  d = g Wdnᵀ;
//   xo = x2 + d;  qkv = rms_norm(xo, nnw) Wqkvᵀ
// A decode step's projections are a chain of small matvecs whose dispatches each pay a launch, a
// drain and the first weight loads' latency on top of their bytes. Here each workgroup loads its
// rows of the next projection into registers before it waits at the barrier, so that latency
// overlaps the wait. G workgroups of WG threads, G no more than the device holds at once (every
// one of them must be resident for a barrier to pass). What one phase hands the next (o, g, d)
// goes through atomic words of `sc`, which reach the other workgroups where plain loads may hit a
// stale cache (grid_sync_probe); x and att come from earlier dispatches and load plainly.
// sc words: [0] the barrier's arrivals, [1] workgroups done (the last resets both for the next
// dispatch), then o at Y_O, g at GB, d at Y_D.
// Phase X's rows: workgroup g owns rows g RP_X .. g RP_X + RP_X of its N_X, handled in chunks of
// CR_X rows: thread v (numbered by subgroup) holds words v % TPR_X + i TPR_X (i < WPT_X, 8 weights
// a word) of rows v / TPR_X + j RS_X (j < PC_X) in registers r{j}_{i}. layer_bridge.rs generates
// load_X (a chunk's words into the registers) and dot_X (their dots with xs, a row's subgroup
// sums into red).
// Constants: WG, G, D, KA, F, NQ, XS, RED, W_F16, NW_OFFSET; per phase N_X, RP_X, CR_X, NCH_X, TPR_X.
// Bindings: att, x, pnw, nnw (read), wo, wgu, wdn, wqkv (read4), xo, qkv (write), sc (atomic).

struct Params {
    offs: array<vec4<u32>, 3>,
    eps: f32,
    _a: u32,
    _b: u32,
    _c: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

const Y_O = 4u;
const GB = Y_O + D;
const Y_D = GB + F;

var<workgroup> xs: array<f32, XS>;
var<workgroup> red: array<f32, RED>;
var<workgroup> nrm: array<f32, 33>;

// The 8 16-bit weights of a word as two vec4s, elements 0-3 then 4-7 (an element's half: the low
// one first)
fn w_lo(w: vec4<u32>) -> vec4<f32> {
    if (W_F16) {
        return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
    }
    return vec4<f32>(bitcast<f32>(w.x << 16u), bitcast<f32>(w.x & 0xffff0000u),
                     bitcast<f32>(w.y << 16u), bitcast<f32>(w.y & 0xffff0000u));
}
fn w_hi(w: vec4<u32>) -> vec4<f32> {
    if (W_F16) {
        return vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
    }
    return vec4<f32>(bitcast<f32>(w.z << 16u), bitcast<f32>(w.z & 0xffff0000u),
                     bitcast<f32>(w.w << 16u), bitcast<f32>(w.w & 0xffff0000u));
}

// A word's dot with elements 8c .. 8c + 7 of xs
fn dot8(w: vec4<u32>, c: u32) -> f32 {
    let e = c * 8u;
    let a = vec4<f32>(xs[e], xs[e + 1u], xs[e + 2u], xs[e + 3u]);
    let b = vec4<f32>(xs[e + 4u], xs[e + 5u], xs[e + 6u], xs[e + 7u]);
    return dot(w_lo(w), a) + dot(w_hi(w), b);
}

// Row t of the chunk: its subgroups' sums (TPR / sgs of them)
fn row_sum(t: u32, tpr: u32, sgs: u32) -> f32 {
    var y = 0.0;
    for (var i = 0u; i < tpr / sgs; i++) {
        y += red[t * 32u + i];
    }
    return y;
}

fn f32_at(i: u32) -> f32 {
    return bitcast<f32>(atld_sc(i));
}

// Arrival at the grid barrier: every invocation's stores fenced, then one arrival a workgroup
fn arrive(t: u32) {
    storageBarrier();
    if (t == 0u) {
        atadd_sc(0u, 1u);
    }
}

// Every invocation waits for `goal` arrivals (a thread-0 wait with a workgroup barrier after it
// read stale words on lavapipe: phase_chain_probe)
fn wait(goal: u32) {
    loop {
        if (atld_sc(0u) >= goal) {
            break;
        }
    }
    storageBarrier();
}

// xs = rms_norm(x + o (+ d), nw) over D; the workgroup of rows 0 stores x + o + d as xo
fn stage_norm(g: u32, t: u32, sgi: u32, sgs: u32, sgid: u32, next: bool) {
    var ss = 0.0;
    for (var i = t; i < D; i += WG) {
        var a = ld_x(i) + f32_at(Y_O + i);
        if (next) {
            a = a + f32_at(Y_D + i);
            if (g == 0u) {
                st_xo(i, a);
            }
        }
        xs[i] = a;
        ss += a * a;
    }
    ss = sg_sum(ss, sgs);
    if (sgi == 0u) {
        nrm[sgid] = ss;
    }
    workgroupBarrier();
    if (t == 0u) {
        var s = 0.0;
        for (var i = 0u; i < WG / sgs; i++) {
            s += nrm[i];
        }
        nrm[32] = 1.0 / sqrt(s / f32(D) + p.eps);
    }
    workgroupBarrier();
    let inv = nrm[32];
    for (var i = t; i < D; i += WG) {
        var w = 0.0;
        if (next) {
            w = ld_nnw(i);
        } else {
            w = ld_pnw(i);
        }
        if (NW_OFFSET) {
            w = 1.0 + w;
        }
        xs[i] = xs[i] * inv * w;
    }
    workgroupBarrier();
}

//@generated

@compute @workgroup_size(WG)
fn layer_bridge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32,
                @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
                @builtin(subgroup_id) sgid: u32) {
    let g = wid.x;
    let v = sgid * sgs + sgi;
    load_o(g, v, 0u);
    // 1. o = att Woᵀ
    for (var i = t; i < KA; i += WG) {
        xs[i] = ld_att(i);
    }
    workgroupBarrier();
    for (var ch = 0u; ch < NCH_O; ch++) {
        if (ch > 0u) {
            load_o(g, v, ch);
        }
        dot_o(v, sgi, sgs);
        workgroupBarrier();
        let row = g * RP_O + ch * CR_O + t;
        if (t < CR_O && ch * CR_O + t < RP_O && row < N_O) {
            atst_sc(Y_O + row, bitcast<u32>(row_sum(t, TPR_O, sgs)));
        }
        workgroupBarrier();
    }
    arrive(t);
    load_gu(g, v, 0u);
    wait(G);
    // 2. g = swiglu pairs of rms_norm(x + o, pnw) Wguᵀ
    stage_norm(g, t, sgi, sgs, sgid, false);
    for (var ch = 0u; ch < NCH_GU; ch++) {
        if (ch > 0u) {
            load_gu(g, v, ch);
        }
        dot_gu(v, sgi, sgs);
        workgroupBarrier();
        let row = g * RP_GU + ch * CR_GU + t;
        if (t % 2u == 0u && t < CR_GU && ch * CR_GU + t < RP_GU && row < N_GU) {
            let yg = row_sum(t, TPR_GU, sgs);
            let yu = row_sum(t + 1u, TPR_GU, sgs);
            atst_sc(GB + row / 2u, bitcast<u32>(yg / (1.0 + exp(-yg)) * yu));
        }
        workgroupBarrier();
    }
    arrive(t);
    load_dn(g, v, 0u);
    wait(2u * G);
    // 3. d = g Wdnᵀ
    for (var i = t; i < F; i += WG) {
        xs[i] = f32_at(GB + i);
    }
    workgroupBarrier();
    for (var ch = 0u; ch < NCH_DN; ch++) {
        if (ch > 0u) {
            load_dn(g, v, ch);
        }
        dot_dn(v, sgi, sgs);
        workgroupBarrier();
        let row = g * RP_DN + ch * CR_DN + t;
        if (t < CR_DN && ch * CR_DN + t < RP_DN && row < N_DN) {
            atst_sc(Y_D + row, bitcast<u32>(row_sum(t, TPR_DN, sgs)));
        }
        workgroupBarrier();
    }
    arrive(t);
    load_qkv(g, v, 0u);
    wait(3u * G);
    // 4. xo = x + o + d; qkv = rms_norm(xo, nnw) Wqkvᵀ
    stage_norm(g, t, sgi, sgs, sgid, true);
    for (var ch = 0u; ch < NCH_QKV; ch++) {
        if (ch > 0u) {
            load_qkv(g, v, ch);
        }
        dot_qkv(v, sgi, sgs);
        workgroupBarrier();
        let row = g * RP_QKV + ch * CR_QKV + t;
        if (t < CR_QKV && ch * CR_QKV + t < RP_QKV && row < N_QKV) {
            st_qkv(row, row_sum(t, TPR_QKV, sgs));
        }
        workgroupBarrier();
    }
    // the last workgroup out resets the counters (every other one is past its last wait)
    if (t == 0u) {
        if (atadd_sc(1u, 1u) == G - 1u) {
            atst_sc(1u, 0u);
            atst_sc(0u, 0u);
        }
    }
}
