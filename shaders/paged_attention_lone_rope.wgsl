// paged_attention_lone.wgsl's prologue for the fused q/k norm, RoPE and cache write: kv head g's
// G query heads and its new key normed (n = x / sqrt(mean(x^2) + eps) * w) and rotated here
// (NeoX RoPE on the first 2 * half dims at the step's position; NaN past the tables), its new
// value as given. Partition 0's workgroup writes the key and value to the pools at the step's
// pool row (rounded to the pools' dtypes; not at all past the pool), and every workgroup takes
// them from here for that row instead of reading it: the composition's order (written, then
// attended) without a round trip.
// Rows of raw_s: the G query heads, the key (row G), the value (row G + 1), DH4 vec4s each.
// Where the rows come from is a second file put before this one, which gives
//   fn raw4(hr: u32, g: u32, c4: u32) -> vec4<f32>   vec4 c4 of raw_s row hr
//   fn w4(hr: u32, g: u32, c4: u32) -> vec4<f32>     its norm weight (rows hr <= G)
//   fn front_more(tid: u32, g: u32)                  its other loads of step 1
//   fn pos_slot() -> vec2<u32>                       the step's position and pool row (NO_ROW: none)
//   fn gate_out(hh: u32, c4: u32, o: vec4<f32>) -> vec4<f32>   an output vec4 as stored
// paged_attention_lone_x.wgsl (rms_norm_rope_kv_attention: the stacked projection) or
// paged_attention_lone_gated.wgsl (paged_gated_attention: Qwen3.5's query, gate, key, value).
// Params: eps, half, max_pos (cos / sin rows).

const NR = G + 2u;
const IQ = (NR * DH4 + NT - 1u) / NT;   // raw_s items a thread

var<private> new_row: u32 = NO_NEW;
var<private> wv: array<vec4<f32>, IQ>;   // the norm weights of this thread's items
var<workgroup> raw_s: array<vec4<f32>, NR * DH4>;
var<workgroup> ss_s: array<f32, NR * DH4>;
var<workgroup> inv_s: array<f32, NR>;

fn front(tid: u32, g: u32) {
    front_more(tid, g);
    for (var it = 0u; it < IQ; it++) {
        let i = tid + it * NT;
        if (i < NR * DH4) {
            let hr = i / DH4;
            let c4 = i % DH4;
            let v = raw4(hr, g, c4);
            raw_s[i] = v;
            if (hr <= G) {
                wv[it] = w4(hr, g, c4);
                ss_s[i] = dot(v, v);
            }
        }
    }
}

fn finish(tid: u32, g: u32, part: u32) {
    let ps = pos_slot();
    let pos = ps.x;
    let slot = ps.y;
    let half = p.half;
    // the cos / sin of this thread's items first (they need only pos)
    var cs: array<vec4<f32>, IQ>;
    var sn: array<vec4<f32>, IQ>;
    for (var it = 0u; it < IQ; it++) {
        let i = tid + it * NT;
        let e = (i % DH4) * 4u;
        if (i < (G + 1u) * DH4 && e < 2u * half) {
            let j = pos * half + select(e - half, e, e < half);
            var c = vec4<f32>(bitcast<f32>(nan_bits));
            var s = c;
            if (pos < p.max_pos) {
                c = vec4<f32>(ld_cos(j), ld_cos(j + 1u), ld_cos(j + 2u), ld_cos(j + 3u));
                s = vec4<f32>(ld_sin(j), ld_sin(j + 1u), ld_sin(j + 2u), ld_sin(j + 3u));
            }
            cs[it] = c;
            sn[it] = s;
        }
    }
    if (tid < G + 1u) {
        var s4 = vec4<f32>(0.0);
        for (var c = tid * DH4; c < tid * DH4 + DH4; c += 4u) {
            s4 += vec4<f32>(ss_s[c], ss_s[c + 1u], ss_s[c + 2u], ss_s[c + 3u]);
        }
        let ss = (s4.x + s4.y) + (s4.z + s4.w);
        inv_s[tid] = 1.0 / sqrt(ss / f32(p.dh) + p.eps);
    }
    workgroupBarrier();
    for (var it = 0u; it < IQ; it++) {
        let i = tid + it * NT;
        if (i < (G + 1u) * DH4) {
            raw_s[i] = raw_s[i] * inv_s[i / DH4] * wv[it];
        }
    }
    workgroupBarrier();
    // rotate-half pairs (e, e + half): half a multiple of 4, so a vec4 pairs with one vec4
    var out: array<vec4<f32>, IQ>;
    for (var it = 0u; it < IQ; it++) {
        let i = tid + it * NT;
        if (i < (G + 1u) * DH4) {
            let e = (i % DH4) * 4u;
            let n = raw_s[i];
            var y = n;
            if (e < half) {
                y = n * cs[it] - raw_s[i + half / 4u] * sn[it];
            } else if (e < 2u * half) {
                y = n * cs[it] + raw_s[i - half / 4u] * sn[it];
            }
            out[it] = y;
        }
    }
    workgroupBarrier();
    let write = part == 0u && slot < p.nb * p.bs;
    let dst = (slot * p.hkv + g) * p.dh;
    for (var it = 0u; it < IQ; it++) {
        let i = tid + it * NT;
        let hr = i / DH4;
        let c4 = i % DH4;
        if (hr < G) {
            q_s[i] = out[it] * p.scale;
        } else if (hr == G) {
            let y = out[it];
            let k = vec4<f32>(as_kp(y.x), as_kp(y.y), as_kp(y.z), as_kp(y.w));
            new_k_s[c4] = k;
            if (write) {
                st2_kp(dst + c4 * 4u, k.x, k.y);
                st2_kp(dst + c4 * 4u + 2u, k.z, k.w);
            }
        } else if (hr == G + 1u) {
            let y = raw_s[i];
            let v = vec4<f32>(as_vp(y.x), as_vp(y.y), as_vp(y.z), as_vp(y.w));
            new_v_s[c4] = v;
            if (write) {
                st2_vp(dst + c4 * 4u, v.x, v.y);
                st2_vp(dst + c4 * 4u + 2u, v.z, v.w);
            }
        }
    }
    new_row = select(NO_NEW, slot, slot < p.nb * p.bs);
    workgroupBarrier();
}
