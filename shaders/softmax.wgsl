// Row softmax over the last dim, f32 math: y = exp(x - max) / sum(exp(x - max)).
// One workgroup per row. Pass 1: each invocation keeps an online (max, sum) over its strided
// columns; the pairs are merged in workgroup memory. Pass 2 writes two adjacent columns per
// invocation (a whole word for 16-bit outputs where aligned).
// A row of all -inf gives NaN (0/0), like the host reference.
// Bindings: x (read), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    c: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// The lowest finite f32: a start for the running max that keeps exp() arguments finite.
const LOWEST: f32 = -3.4028234663852886e38;

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_s: array<f32, WG>;

@compute @workgroup_size(WG)
fn softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.c;
    var m = LOWEST;
    var s = 0.0;
    for (var j = lid; j < p.c; j += WG) {
        let v = ld_x(base + j);
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else {
            s += exp(v - m);
        }
    }
    red_m[lid] = m;
    red_s[lid] = s;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            let m1 = red_m[lid];
            let m2 = red_m[lid + h];
            let mm = max(m1, m2);
            red_s[lid] = red_s[lid] * exp(m1 - mm) + red_s[lid + h] * exp(m2 - mm);
            red_m[lid] = mm;
        }
        workgroupBarrier();
    }
    let mx = red_m[0];
    let sum = red_s[0];
    for (var q = lid; 2u * q < p.c; q += WG) {
        let j = 2u * q;
        let a = exp(ld_x(base + j) - mx) / sum;
        if (j + 1u < p.c) {
            st2_y(base + j, a, exp(ld_x(base + j + 1u) - mx) / sum);
        } else {
            st_y(base + j, a);
        }
    }
}
