// The gated delta rule token by token for one (value head h, tile of TJ value columns) of one
// sequence: the body of gdn_recurrent (gdn_recurrent.wgsl, one sequence) and gdn_batch
// (gdn_batch.wgsl, packed sequences with state slots), so both give the same bits for the same
// state and tokens. Thread (lane, j) owns column j of the tile and rows i = lane + L * r (r < RMAX)
// of the state in registers; k^T S and q^T S are summed over the L lanes of a column in workgroup
// memory. Per token:
//   1. q and k rows of key head kh into q_s / k_s; their sums of squares reduced (f32)
//   2. S *= exp(g); kv = (k^T S)[j] * rk      3. delta = (v - kv) * beta; S += k rk delta
//   4. o[j] = (q^T S)[j] * rq (read after the update)
// The including file declares `p` with nk, nv, dv, c (qkv row width), group (nv / nk), and the
// bindings qkv, b, a, a_log, dt_bias, o; it gives ld_state / st_state_out over the state, and
// the hooks: in_x (channel e of token row t's q/k/v: qkv's element as it is, or through the conv),
// tile_end (after the last token, by the invocation that owns value channel e), tile_pre (before
// each token: loads the epilogue will use) and tile_out (called by every invocation after each
// token: it may hold barriers), which stores a column's o. gdn_tile_in.wgsl and gdn_tile_out.wgsl
// give them plain; gdn_conv_norm takes its inputs through gdn_tile_conv.wgsl (or plain) and
// stores o normed (gdn_conv_norm.wgsl).
// Constants: DK (key head dim), NT (workgroup size), TJ (columns per workgroup),
// RMAX = ceil(DK / (NT / TJ)).

const L = NT / TJ;

var<workgroup> q_s: array<f32, DK>;
var<workgroup> k_s: array<f32, DK>;
var<workgroup> red: array<vec2<f32>, NT>;
var<workgroup> part_kv: array<f32, NT>;
var<workgroup> part_o: array<f32, NT>;

// Tokens r0..r0+nt (rows of qkv, b, a, o) of value head h, column tile jt; the state S_h at
// element sbase of the state (read unless `fresh`: then zero) and of the state out.
fn gdn_rec_tile(h: u32, jt: u32, tid: u32, r0: u32, nt: u32, sbase: u32, fresh: bool) {
    let kh = h / p.group;
    let j = tid % TJ;
    let lane = tid / TJ;
    let jj = jt * TJ + j;
    let col = jj < p.dv;
    let qo = kh * DK;
    let ko = p.nk * DK + kh * DK;
    let vo = 2u * p.nk * DK + h * p.dv;

    var s: array<f32, RMAX>;
    for (var r = 0u; r < RMAX; r++) {
        let i = lane + L * r;
        if (col && i < DK && !fresh) {
            s[r] = ld_state(sbase + i * p.dv + jj);
        }
    }
    let qscale = 1.0 / sqrt(f32(DK));
    let ag = -exp(ld_a_log(h));
    let dtb = ld_dt_bias(h);
    for (var t = r0; t < r0 + nt; t++) {
        tile_pre((t * p.nv + h) * p.dv + jj, jj, lane == 0u && col);
        // v first: its loads overlap q's and k's and their reduction
        var v = 0.0;
        if (col) {
            v = in_x(t, vo + jj);
        }
        var sq = vec2<f32>(0.0);
        for (var i = tid; i < DK; i += NT) {
            let qv = in_x(t, qo + i);
            let kv = in_x(t, ko + i);
            q_s[i] = qv;
            k_s[i] = kv;
            sq += vec2<f32>(qv * qv, kv * kv);
        }
        red[tid] = sq;
        workgroupBarrier();
        for (var w = NT / 2u; w > 0u; w >>= 1u) {
            if (tid < w) {
                red[tid] += red[tid + w];
            }
            workgroupBarrier();
        }
        let rq = qscale / sqrt(red[0].x + L2_EPS);
        let rk = 1.0 / sqrt(red[0].y + L2_EPS);
        let beta = sigmoid(ld_b(t * p.nv + h));
        let decay = exp(ag * softplus(ld_a(t * p.nv + h) + dtb));
        var kv = 0.0;
        for (var r = 0u; r < RMAX; r++) {
            let i = lane + L * r;
            if (i < DK) {
                s[r] *= decay;
                kv += s[r] * k_s[i];
            }
        }
        part_kv[tid] = kv * rk;
        workgroupBarrier();
        var kvs = 0.0;
        for (var l = 0u; l < L; l++) {
            kvs += part_kv[l * TJ + j];
        }
        let delta = (v - kvs) * beta;
        var o = 0.0;
        for (var r = 0u; r < RMAX; r++) {
            let i = lane + L * r;
            if (i < DK) {
                s[r] = fma(k_s[i] * rk, delta, s[r]);
                o += s[r] * q_s[i];
            }
        }
        part_o[tid] = o * rq;
        workgroupBarrier();
        let own = lane == 0u && col;
        var os = 0.0;
        if (own) {
            for (var l = 0u; l < L; l++) {
                os += part_o[l * TJ + j];
            }
        }
        tile_out((t * p.nv + h) * p.dv + jj, jj, os, own, tid);
    }
    tile_end(vo + jj, lane == 0u && col);
    for (var r = 0u; r < RMAX; r++) {
        let i = lane + L * r;
        if (col && i < DK) {
            st_state_out(sbase + i * p.dv + jj, s[r]);
        }
    }
}
