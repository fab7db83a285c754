// Params and the row loop of the row norms rms_norm, add_rms_norm and rms_norm_gated (rms_norm.rs
// `dispatch_rows` prepends it, with wg_sum.wgsl): one workgroup per row of d elements. Each kernel
// gives `norm_in` (the value the norm is taken over) and `norm_out` (what it stores for element
// j of the row, with the row's 1/rms); the entry point, generated under the kernel's name
// (rms_norm.rs `row_entry`), calls `norm_rows`.

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    d: u32,
    eps: f32,
    unit_offset: u32,   // rms_norm, add_rms_norm: scale by (1 + w); 0 for rms_norm_gated
}
@group(0) @binding(0) var<uniform> p: Params;

// The norm's weight for element j: w[j] or 1 + w[j].
fn norm_weight(j: u32) -> f32 {
    var g = ld_w(j);
    if (p.unit_offset != 0u) {
        g = 1.0 + g;
    }
    return g;
}

// One workgroup normalizes one row: 1/rms over norm_in (wg_sum.wgsl), then norm_out per element.
fn norm_rows(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) {
    let row = group_index(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    let inv = inv_rms(base, lid);
    for (var j = lid; j < p.d; j += WG) {
        norm_out(base + j, j, inv);
    }
}
