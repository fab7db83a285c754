// Params of the row norms rms_norm, add_rms_norm and rms_norm_gated (rms_norm.rs `dispatch_rows`
// prepends it, with wg_sum.wgsl): one workgroup per row of d elements.

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
