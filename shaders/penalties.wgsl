// Repetition, presence and frequency penalties over rows of logits, one row per sequence, each row
// with its own parameters (Op::Penalties; the reference is backend/cpu/penalties.rs, matched bit
// for bit). logits [R, V] f32, counts [R, V] u32 (output count | PROMPT_SEEN, bit 31),
// params [R, 4] f32 = (rep, rep_inv, presence, frequency) -> out [R, V] f32. One work item per
// element. Every step is one correctly rounded f32 operation, as in the reference (and in vLLM's
// torch code): a multiply by the host's 1/rep (a WGSL division is not correctly rounded), then
// x - frequency * n with the product rounded first, then x - presence. A compiler may contract a
// product and the subtraction that follows into one fused multiply-add, which rounds once instead
// of twice (WGSL and SPIR-V allow it, and lavapipe does it: 1-ulp differences without `rounded`;
// an explicit fma did not round like a fused one there either). Each product goes through
// `rounded`, which the compiler cannot see through, so every device rounds alike.
// Non-finite logits are copied by their bits: WGSL may assume no inf/NaN in float arithmetic.
// Bindings: logits, counts, params (read), out (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    rows: u32,
    v: u32,       // vocabulary: columns of a row
    n: u32,       // rows * v
    zero: u32,    // 0: see `rounded`
}
@group(0) @binding(0) var<uniform> p: Params;

// v itself, as far as the result goes; to the compiler an unknown value, so a product passed
// through here is rounded on its own and never fused into the next addition.
fn rounded(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) ^ p.zero);
}

@compute @workgroup_size(WG)
fn penalties(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wid, nwg) * WG + lid;
    if (i >= p.n) {
        return;
    }
    let c = ld_counts(i);
    let bits = ldbits_logits(i);
    if (c == 0u || (bits & 0x7f800000u) == 0x7f800000u) {
        stbits_out(i, bits);
        return;
    }
    let r = i / p.v;
    let l = bitcast<f32>(bits);
    var x = rounded(l * select(ld_params(4u * r), ld_params(4u * r + 1u), l > 0.0));
    let n = c & 0x7fffffffu;
    if (n > 0u) {
        x = x - rounded(ld_params(4u * r + 3u) * f32(n));
        x = x - ld_params(4u * r + 2u);
    }
    st_out(i, x);
}
