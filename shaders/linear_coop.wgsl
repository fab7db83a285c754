enable f16;
enable wgpu_cooperative_matrix;
// linear on cooperative matrices (tensor cores): y[M, N] = x[M, K] · W[N, K]ᵀ for f32 x and y and
// 16-bit W (W_KIND 1 f16, 2 bf16), f16 T x T x T products with f32 sums (T = 16, or 8 where the
// adapter's matrices are 8x8). linear/coop.rs fills in the `//@` lines and the loaders.
//
// Accuracy: x is split into hi (x cut to f16's 11 significant bits) and lo = f16(x - hi);
// token t's hi is A-tile row 2t and its lo row 2t + 1, so one product serves both and y = C[2t] + C[2t + 1] (in that order);
// with XKD 1 the hi rows are tile rows 0..TOK and the lo rows TOK..2 TOK, and each K slice's hi
// and lo products go into one accumulator (hi first), whose tile is y itself. W is
// exact in f16 (bf16 in f16's normal range). A quantized W (W_SPLIT 2, prefill only: linear/
// coop_quant.rs) is dequantized exactly to f32 by its type file's `wq4`, then split into hi and lo
// the same way (stage_wq, finish_q). x's error is then |x|·2^-21 or less, plus 2^-25
// absolute where lo falls below f16's normal range (W's likewise). hi is clamped to ±65504 (f16's largest), so
// 65504 < |x| < 131024 keeps the excess in lo (2^-11 of the excess); a larger finite |x| makes lo
// infinite and y ±inf or NaN; NaN or ±inf in x gives NaN or ±inf as the f32 product would.
//
// Shape: a workgroup owns BN = WN·TN·T tile columns, BNO = BN / W_SPLIT weight rows (outputs
// n0..), and TOK = WM·TM·T/2 tokens (XKD 1: WM·TM·T)
// (BMT = 2·TOK tile rows); it is NSG = WN·WM·KS subgroups of SUBW, subgroup sg being
// (ks, wn, wm) = (sg % KS, sg / KS % WN, sg / (KS·WN)); each holds TM x TN accumulator tiles.
// K is walked in steps of BK: the step's W and x go from registers (loaded the step before,
// 16 bytes a lane where aligned) to workgroup memory as f16 (rows XS apart), then each subgroup
// multiplies the T-wide K slices of the step that are its own: slice g (k in Tg..Tg+T-1) is
// K-group g % KS's, and a K-group takes its slices in increasing g. At the end the KS partial
// tiles are added in K-group order. So an output's order of sums depends on K, KS and XKD alone:
// never on M, N, the row's place in a tile, BN, BMT or BK (plans of the same KS and XKD give the
// same bits). Rows past M and columns past N are zeros, never stored; K's tail is zeros.
// Split K (KC > 0): the grid is S = ceil(K / KC) times as large, the workgroups of split `part`
// taking K from part * KC to (part + 1) * KC (KC a multiple of BK), and `put_y` stores their
// hi + lo sums as partial `part` of the outputs (in a [S, M, N] scratch bound as y);
// linear_splitk.wgsl adds the S partials in order 0, 1, ... So the order then depends on K, KC
// and KS alone. A small M gets workgroups enough
// to fill the GPU this way without tiles that re-read W for a few tokens each.
//
//   //@decl     var c{tm}_{tn} (accumulators), var wv{j} / xv{j} (the next step's loads)
//   //@loop     the walk over K: each step's loads (wv{j} = load_w(lid + j·NT, n0, k0), xv{j} =
//               load_x(...)) issued a step ahead, staged (stage_w or stage_wq, stage_x: into stage
//               o of NBUF), and this subgroup's slices of the step multiplied (A, B fragments,
//               TM·TN products). NBUF 1: stage, barrier, multiply, barrier, two barriers a step;
//               NBUF 2: the next step staged into the other stage while this one multiplies, one
//               barrier a step (coop.rs `main_loop`)
//   //@store    each tile through this subgroup's scratch to `finish` (`finish_swiglu`, `finish_q`)
// Generated before this file: WREG and ld_w8(n, k) (8 weights of row n from k: a vec4<u32> of
// raw 16-bit pairs, or a mat2x4<f32> of dequantized weights), ld_x4(m, k) (4 x of row m, raw bits),
// zeros past K / N / M; put_y(part, m, n, v) (output or partial `part` of output [m, n]).

// (Params and `p` come before: coop.rs's for 16-bit W, qcommon.wgsl's for quantized W.)

const BN = WN * TN * T;
// XKD 1: x's hi rows are tile rows 0..TOK and its lo rows TOK..2 TOK, both multiplied into one
// accumulator (TM tiles of T tokens a subgroup); XKD 0: token t's hi and lo are rows 2t, 2t + 1.
const TOK = WM * TM * T / (2u - XKD);
const BMT = 2u * TOK;
const TT = T * T;
const NT = NSG * SUBW;
const BNO = BN / W_SPLIT; // outputs a workgroup (a quantized W's rows are two tile columns)
const XS = BK + 8u;
const WV = BNO * BK / 8u; // 8-weight W loads a step
const XV = TOK * BK / 4u; // 16-byte x loads a step

// NBUF stages of W and x (2: the next step staged while this one multiplies; see `//@loop`) in
// vectors of 4 halves, so that a thread's 4 or 8 staged values are one or two stores rather than
// 4 or 8 (coopLoad offsets and strides count vec4s).
var<workgroup> ws: array<vec4<f16>, NBUF * BN * XS / 4u>;
var<workgroup> xs: array<vec4<f16>, NBUF * BMT * XS / 4u>;
var<workgroup> red: array<f32, NSG * TT>;

fn load_w(i: u32, n0: u32, k0: u32) -> WREG {
    if (i >= WV) {
        return WREG();
    }
    return ld_w8(n0 + i / (BK / 8u), k0 + (i % (BK / 8u)) * 8u);
}

fn load_x(i: u32, m0: u32, k0: u32) -> vec4<u32> {
    if (i >= XV) {
        return vec4<u32>();
    }
    return ld_x4(m0 + i / (BK / 4u), k0 + (i % (BK / 4u)) * 4u);
}

fn half2(bits: u32) -> vec2<f16> {
    if (W_KIND == 1u) {
        return vec2<f16>(unpack2x16float(bits)); // exact: f16 -> f32 -> f16
    }
    return vec2<f16>(vec2<f32>(bitcast<f32>(bits << 16u), bitcast<f32>(bits & 0xffff0000u)));
}

fn stage_w(i: u32, v: vec4<u32>, o: u32) {
    if (i >= WV) {
        return;
    }
    let at = o + (i / (BK / 8u)) * XS + (i % (BK / 8u)) * 8u;
    ws[at / 4u] = vec4<f16>(half2(v.x), half2(v.y));
    ws[at / 4u + 1u] = vec4<f16>(half2(v.z), half2(v.w));
}

// A quantized W's 8 weights (dequantized exactly, f32) as hi and lo like x's: weight row r is tile
// columns 2r (hi) and 2r + 1 (lo), so C[2t + a, 2r + b] = x_a · w_b and finish_q adds the four.
fn stage_wq(i: u32, v: mat2x4<f32>, o: u32) {
    if (i >= WV) {
        return;
    }
    let at = o + (i / (BK / 8u)) * 2u * XS + (i % (BK / 8u)) * 8u;
    let a = split(bitcast<u32>(v[0].x));
    let b = split(bitcast<u32>(v[0].y));
    let c = split(bitcast<u32>(v[0].z));
    let d = split(bitcast<u32>(v[0].w));
    let e = split(bitcast<u32>(v[1].x));
    let f = split(bitcast<u32>(v[1].y));
    let g = split(bitcast<u32>(v[1].z));
    let h = split(bitcast<u32>(v[1].w));
    ws[at / 4u] = vec4<f16>(a.x, b.x, c.x, d.x);
    ws[at / 4u + 1u] = vec4<f16>(e.x, f.x, g.x, h.x);
    ws[(at + XS) / 4u] = vec4<f16>(a.y, b.y, c.y, d.y);
    ws[(at + XS) / 4u + 1u] = vec4<f16>(e.y, f.y, g.y, h.y);
}

// hi and lo of x (see the top)
// hi keeps x's sign, exponent and top ten mantissa bits (an f16 value in f16's normal range, cut in
// the integer domain); lo = x - hi is exact in f32 and rounds to f16 with 11 more bits. A compiler
// that keeps f16(x) at f32 precision cannot fold this away (rounding through f16(x) or
// pack2x16float left lo at zero on the H200: the error of hi alone)
fn split(bits: u32) -> vec2<f16> {
    let x = bitcast<f32>(bits);
    let h = bitcast<f32>(bitcast<u32>(clamp(x, -65504.0, 65504.0)) & 0xffffe000u);
    return vec2<f16>(f16(h), f16(x - h));
}

fn stage_x(i: u32, v: vec4<u32>, o: u32) {
    if (i >= XV) {
        return;
    }
    let r = i / (BK / 4u);
    let kq = (i % (BK / 4u)) * 4u;
    let at = o + select(2u * r, r, XKD == 1u) * XS + kq;
    let lo = o + select(2u * r + 1u, r + TOK, XKD == 1u) * XS + kq;
    let a = split(v.x);
    let b = split(v.y);
    let c = split(v.z);
    let d = split(v.w);
    xs[at / 4u] = vec4<f16>(a.x, b.x, c.x, d.x);
    xs[lo / 4u] = vec4<f16>(a.y, b.y, c.y, d.y);
}

// The outputs of one T x T tile position (tile rows r0.., columns c0.. of the workgroup's block)
// of the K-groups whose first subgroup is `grp`, their partials in red[(grp + s) * TT ..]: hi
// rows summed over s, lo rows likewise, then hi + lo.
fn finish(q0: u32, grp: u32, r0: u32, c0: u32, m0: u32, n0: u32, part: u32) {
    if (XKD == 1u) {
        for (var q = q0; q < TT; q += KS * SUBW) {
            let e = grp * TT + q;
            var h = red[e];
            for (var s = 1u; s < KS; s++) {
                h += red[e + s * TT];
            }
            let m = m0 + r0 + q / T;
            let n = n0 + c0 + q % T;
            if (m < p.m && n < p.n) {
                put_y(part, m, n, h);
            }
        }
        return;
    }
    for (var q = q0; q < TT / 2u; q += KS * SUBW) {
        let t = q / T;
        let c = q % T;
        let e = grp * TT + 2u * t * T + c;
        var h = red[e];
        var l = red[e + T];
        for (var s = 1u; s < KS; s++) {
            h += red[e + s * TT];
            l += red[e + s * TT + T];
        }
        let m = m0 + r0 / 2u + t;
        let n = n0 + c0 + c;
        if (m < p.m && n < p.n) {
            put_y(part, m, n, h + l);
        }
    }
}

// `finish` for the gate/up projection with its swiglu (Op::LinearSwiGlu): weight rows 2j and 2j + 1
// are gate and up of output j, columns c and c + 1 (c even) of one tile, so the invocation of a
// pair sums both exactly as `finish` does and stores swiglu_pairs.wgsl's formula of them at
// [m, (n0 + c0 + c) / 2] (N even).
fn finish_swiglu(q0: u32, grp: u32, r0: u32, c0: u32, m0: u32, n0: u32, part: u32) {
    if (XKD == 1u) {
        for (var q = q0; q < TT / 2u; q += KS * SUBW) {
            let t = q / (T / 2u);
            let c = 2u * (q % (T / 2u));
            let e = grp * TT + t * T + c;
            var g = red[e];
            var u = red[e + 1u];
            for (var s = 1u; s < KS; s++) {
                g += red[e + s * TT];
                u += red[e + s * TT + 1u];
            }
            let m = m0 + r0 + t;
            let n = n0 + c0 + c;
            if (m < p.m && n < p.n) {
                st_y(m * (p.n / 2u) + n / 2u, g / (1.0 + exp(-g)) * u);
            }
        }
        return;
    }
    for (var q = q0; q < TT / 4u; q += KS * SUBW) {
        let t = q / (T / 2u);
        let c = 2u * (q % (T / 2u));
        let e = grp * TT + 2u * t * T + c;
        var gh = red[e];
        var gl = red[e + T];
        var uh = red[e + 1u];
        var ul = red[e + T + 1u];
        for (var s = 1u; s < KS; s++) {
            gh += red[e + s * TT];
            gl += red[e + s * TT + T];
            uh += red[e + s * TT + 1u];
            ul += red[e + s * TT + T + 1u];
        }
        let m = m0 + r0 / 2u + t;
        let n = n0 + c0 + c;
        if (m < p.m && n < p.n) {
            let g = gh + gl;
            st_y(m * (p.n / 2u) + n / 2u, g / (1.0 + exp(-g)) * (uh + ul));
        }
    }
}

// `finish` for a quantized W (W_SPLIT 2): output (t, o) of the tile is x_hi·w_hi + x_lo·w_hi +
// x_hi·w_lo + x_lo·w_lo, tile entries (2t, 2o), (2t + 1, 2o), (2t, 2o + 1), (2t + 1, 2o + 1), each
// summed over the K-groups first; the tile's outputs start at column c0 / 2.
fn finish_q(q0: u32, grp: u32, r0: u32, c0: u32, m0: u32, n0: u32, part: u32) {
    for (var q = q0; q < TT / 4u; q += KS * SUBW) {
        let t = q / (T / 2u);
        let o = q % (T / 2u);
        let e = grp * TT + 2u * t * T + 2u * o;
        var hh = red[e];
        var lh = red[e + T];
        var hl = red[e + 1u];
        var ll = red[e + T + 1u];
        for (var s = 1u; s < KS; s++) {
            hh += red[e + s * TT];
            lh += red[e + s * TT + T];
            hl += red[e + s * TT + 1u];
            ll += red[e + s * TT + T + 1u];
        }
        let m = m0 + r0 / 2u + t;
        let n = n0 + c0 / 2u + o;
        if (m < p.m && n < p.n) {
            put_y(part, m, n, (hh + lh) + (hl + ll));
        }
    }
}

@compute @workgroup_size(NT)
fn linear_coop(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sg: u32,
               @builtin(subgroup_invocation_id) lane: u32) {
    // No early return for the grid's spare workgroups (cooperative ops want uniform control
    // flow): their tokens start past M, so they stage zeros and store nothing.
    let nb = (p.n + BNO - 1u) / BNO;
    let tiles = nb * ((p.m + TOK - 1u) / TOK);
    let g = group_index(wid, nwg);
    let part = g / tiles; // the K split (0 unsplit; past the last one: a spare workgroup)
    let n0 = (g % tiles % nb) * BNO;
    var k0 = 0u;
    var ke = p.k;
    if (KC > 0u) {
        k0 = min(part * KC, p.k);
        ke = min(k0 + KC, p.k);
    }
    let parts = select(1u, (p.k + KC - 1u) / max(KC, 1u), KC > 0u);
    let m0 = select((g % tiles / nb) * TOK, p.m, part >= parts);
    let ks = sg % KS;
    let wn = (sg / KS) % WN;
    let wm = sg / (KS * WN);
    let steps = (ke - k0 + BK - 1u) / BK;
    //@decl
    //@loop
    //@store
}
