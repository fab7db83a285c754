// paged_attention_lone.wgsl's prologue for rms_norm_rope_kv_attention: kv head g's G query heads
// and its new key normed and rotated here from the stacked projection x [1, Hq + 2 Hkv, Dh] (as
// rms_norm_rope_row.wgsl: n = x / sqrt(mean(x^2) + eps) * w, then NeoX RoPE on the first
// 2 * half dims at position pos[0]; NaN past the tables), its new value as given. Partition 0's
// workgroup writes the key and value to the pools at pool row slots[0] (rounded to the pools'
// dtypes; not at all past the pool), and every workgroup takes them from here for that row
// instead of reading it: the composition's order (written, then attended) without a round trip.
// Rows of raw_s: the G query heads, the key (row G), the value (row G + 1), DH4 vec4s each.
// Bindings x, w, pos, cos, sin, slots (read), kp, vp (read and written as words).
// Params: eps, half, max_pos (cos / sin rows), wstride (Dh when w has a row a head, else 0).

const NR = G + 2u;
const IQ = (NR * DH4 + NT - 1u) / NT;   // raw_s items a thread

var<private> new_row: u32 = NO_NEW;
var<private> wv: array<vec4<f32>, IQ>;   // the norm weights of this thread's items
var<workgroup> raw_s: array<vec4<f32>, NR * DH4>;
var<workgroup> ss_s: array<f32, NR * DH4>;
var<workgroup> inv_s: array<f32, NR>;
var<workgroup> ps_w: vec2<u32>;          // pos[0], slots[0]

// The x head of raw_s row hr.
fn x_head(hr: u32, g: u32) -> u32 {
    if (hr < G) {
        return g * G + hr;
    }
    if (hr == G) {
        return p.hq + g;
    }
    return p.hq + p.hkv + g;
}

fn ld4_x(i: u32) -> vec4<f32> {
    return vec4<f32>(ld_x(i), ld_x(i + 1u), ld_x(i + 2u), ld_x(i + 3u));
}

fn ld4_w(i: u32) -> vec4<f32> {
    return vec4<f32>(ld_w(i), ld_w(i + 1u), ld_w(i + 2u), ld_w(i + 3u));
}

fn front(tid: u32, g: u32) {
    if (tid == 0u) {
        ps_w = vec2<u32>(ld_pos(0u), ld_slots(0u));
    }
    for (var it = 0u; it < IQ; it++) {
        let i = tid + it * NT;
        if (i < NR * DH4) {
            let hr = i / DH4;
            let h = x_head(hr, g);
            let c4 = i % DH4;
            let v = ld4_x(h * p.dh + c4 * 4u);
            raw_s[i] = v;
            if (hr <= G) {
                wv[it] = ld4_w(h * p.wstride + c4 * 4u);
                ss_s[i] = dot(v, v);
            }
        }
    }
}

fn finish(tid: u32, g: u32, part: u32) {
    let ps = workgroupUniformLoad(&ps_w);
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
        var ss = 0.0;
        for (var c = 0u; c < DH4; c++) {
            ss += ss_s[tid * DH4 + c];
        }
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
