// x as three byte limbs a value, for the integer-dot matvec lanes (q4_k_dp.wgsl): one
// invocation a 32-element block of x[M, K] (K % 32 == 0). Block floating point: the block's
// values become integers X = round(x / s) with s a power of two chosen so |X| <= 2^22 (the
// block's largest |x| sets it), an error of at most 2^-23 of that largest value an element.
// X = L0 + 256 L1 + 65536 L2 with L0, L1 unsigned bytes and L2 a signed one, four values a word.
// The block's 28 words (7 vec4): for each half h (elements 16h .. 16h + 15) 12 words: L0 of
// elements 16h + 4i .. + 3 in word i, then L1, then L2; then s, the f32 sums of x over the two
// halves, and a zero. A block with a non-finite value gets s and its sums NaN, so the matvec's
// result for that row is NaN as it would be in f32.
// Bindings: x (read as vec4 words: x_v4, f32 bits, starting on a vec4), xl (write, u32).

struct Params {
    offs: array<vec4<u32>, 2>,
    blocks: u32, // M * K / 32
    _p0: u32,
    _p1: u32,
    _p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// The low byte of each of four integers, packed (v.x in bits 0..7).
fn pack_bytes(v: vec4<i32>) -> u32 {
    let u = bitcast<vec4<u32>>(v) & vec4<u32>(0xffu);
    return u.x | (u.y << 8u) | (u.z << 16u) | (u.w << 24u);
}

// Elements 4i .. 4i + 3 of the block at word `base`: L0, L1, L2 into words i, i + 4, i + 8
// of their half.
fn put(base: u32, i: u32, xv: vec4<f32>, inv: f32) {
    let q = vec4<i32>(round(xv * inv));
    let w = base + (i / 4u) * 12u + i % 4u;
    stbits_xl(w, pack_bytes(q));
    stbits_xl(w + 4u, pack_bytes(q >> vec4<u32>(8u)));
    stbits_xl(w + 8u, pack_bytes(q >> vec4<u32>(16u)));
}

fn amax(v: vec4<f32>) -> f32 {
    let a = abs(v);
    return max(max(a.x, a.y), max(a.z, a.w));
}

fn finite(v: vec4<f32>) -> bool {
    return all((bitcast<vec4<u32>>(v) & vec4<u32>(0x7f800000u)) != vec4<u32>(0x7f800000u));
}

@compute @workgroup_size(64)
fn xlimbs(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if (t >= p.blocks) {
        return;
    }
    // the block's 32 values in eight vec4 loads issued together (straight-line: no private array)
    let v0 = (p.offs[0].x >> 2u) + t * 8u;
    let x0 = bitcast<vec4<f32>>(x_v4[v0]);
    let x1 = bitcast<vec4<f32>>(x_v4[v0 + 1u]);
    let x2 = bitcast<vec4<f32>>(x_v4[v0 + 2u]);
    let x3 = bitcast<vec4<f32>>(x_v4[v0 + 3u]);
    let x4 = bitcast<vec4<f32>>(x_v4[v0 + 4u]);
    let x5 = bitcast<vec4<f32>>(x_v4[v0 + 5u]);
    let x6 = bitcast<vec4<f32>>(x_v4[v0 + 6u]);
    let x7 = bitcast<vec4<f32>>(x_v4[v0 + 7u]);
    let big = max(max(max(amax(x0), amax(x1)), max(amax(x2), amax(x3))), max(max(amax(x4), amax(x5)), max(amax(x6), amax(x7))));
    let ok = finite(x0) && finite(x1) && finite(x2) && finite(x3) && finite(x4) && finite(x5) && finite(x6) && finite(x7);
    // 2^e <= big < 2^(e+1) with e = eb - 127; s = 2^(e - 21) so |x / s| < 2^22 (eb clamped so s
    // and 1 / s are normal floats: a block under 2^-104 loses bits, none in practice)
    let eb = clamp((bitcast<u32>(big) >> 23u) & 0xffu, 22u, 254u);
    let s = bitcast<f32>((eb - 21u) << 23u);
    let inv = bitcast<f32>((275u - eb) << 23u);
    let base = t * 28u;
    put(base, 0u, x0, inv);
    put(base, 1u, x1, inv);
    put(base, 2u, x2, inv);
    put(base, 3u, x3, inv);
    put(base, 4u, x4, inv);
    put(base, 5u, x5, inv);
    put(base, 6u, x6, inv);
    put(base, 7u, x7, inv);
    let nan = bitcast<f32>(0x7fc00000u);
    let h0 = dot((x0 + x1) + (x2 + x3), vec4<f32>(1.0));
    let h1 = dot((x4 + x5) + (x6 + x7), vec4<f32>(1.0));
    stbits_xl(base + 24u, bitcast<u32>(select(nan, s, ok)));
    stbits_xl(base + 25u, bitcast<u32>(select(nan, h0, ok)));
    stbits_xl(base + 26u, bitcast<u32>(select(nan, h1, ok)));
    stbits_xl(base + 27u, 0u);
}
