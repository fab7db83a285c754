// x as three byte limbs a value, for q4_k's integer-dot matvec lanes (q4_k_dp.wgsl): a 32-element
// block of x in block floating point. The block's values become integers X = round(x / s) with
// s a power of two chosen so |X| <= 2^22 (the block's largest |x| sets it), an error of at most
// s / 2, 2^-22 of that largest value, an element. X = L0 + 256 L1 + 65536 L2 with L0, L1 unsigned bytes
// and L2 a signed one, four values a word. A block is 7 vec4 words: for each half h (elements
// 16h .. 16h + 15) L0 of elements 16h + 4i .. + 3 in word i, then L1, then L2 (3 vec4); then
// (s, the f32 sums of x over the two halves, 0). A block with a non-finite value gets s and its
// sums NaN, so the matvec's result for that row is NaN as it would be in f32.
// Stored slot-major (by the pre-pass and by qmatvec_xs): a row of S = K / 64
// slots (64 elements: blocks 2c and 2c + 1) is 14 S vec4 words, word j (0..6 block 2c's, 7..13
// block 2c + 1's) of slot c at j S + c, so the threads of a subgroup, on consecutive slots, read
// each word in one contiguous run (a slot's 224 bytes in a row made every load touch 32 cache
// lines).
// Used by the pre-pass xlimbs.wgsl and the matvec entry qmatvec_xs.wgsl.

struct Limbs {
    v0: vec4<u32>, v1: vec4<u32>, v2: vec4<u32>, v3: vec4<u32>, v4: vec4<u32>, v5: vec4<u32>,
    info: vec4<u32>,
}

// The low byte of each of four integers, packed (v.x in bits 0..7).
fn pack_bytes(v: vec4<i32>) -> u32 {
    let u = bitcast<vec4<u32>>(v) & vec4<u32>(0xffu);
    return u.x | (u.y << 8u) | (u.z << 16u) | (u.w << 24u);
}

fn amax(v: vec4<f32>) -> f32 {
    let a = abs(v);
    return max(max(a.x, a.y), max(a.z, a.w));
}

fn finite4(v: vec4<f32>) -> bool {
    return all((bitcast<vec4<u32>>(v) & vec4<u32>(0x7f800000u)) != vec4<u32>(0x7f800000u));
}

// L0, L1, L2 words of four values (x / s rounded).
fn limb_words(xv: vec4<f32>, inv: f32) -> vec3<u32> {
    let q = vec4<i32>(round(xv * inv));
    return vec3<u32>(pack_bytes(q), pack_bytes(q >> vec4<u32>(8u)), pack_bytes(q >> vec4<u32>(16u)));
}

// The limbs of the block x0 .. x7 (elements 4i .. 4i + 3 in xi).
fn to_limbs(x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, x4: vec4<f32>, x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>) -> Limbs {
    let big = max(max(max(amax(x0), amax(x1)), max(amax(x2), amax(x3))), max(max(amax(x4), amax(x5)), max(amax(x6), amax(x7))));
    let ok = finite4(x0) && finite4(x1) && finite4(x2) && finite4(x3) && finite4(x4) && finite4(x5) && finite4(x6) && finite4(x7);
    // 2^e <= big < 2^(e+1) with e = eb - 127; s = 2^(e - 21) so |x / s| < 2^22 (eb clamped so s
    // and 1 / s are normal floats: a block under 2^-104 loses bits, none in practice)
    let eb = clamp((bitcast<u32>(big) >> 23u) & 0xffu, 22u, 254u);
    let s = bitcast<f32>((eb - 21u) << 23u);
    let inv = bitcast<f32>((275u - eb) << 23u);
    let w0 = limb_words(x0, inv);
    let w1 = limb_words(x1, inv);
    let w2 = limb_words(x2, inv);
    let w3 = limb_words(x3, inv);
    let w4 = limb_words(x4, inv);
    let w5 = limb_words(x5, inv);
    let w6 = limb_words(x6, inv);
    let w7 = limb_words(x7, inv);
    let nan = bitcast<f32>(0x7fc00000u);
    let h0 = dot((x0 + x1) + (x2 + x3), vec4<f32>(1.0));
    let h1 = dot((x4 + x5) + (x6 + x7), vec4<f32>(1.0));
    let info = bitcast<vec4<u32>>(select(vec4<f32>(nan, nan, nan, 0.0), vec4<f32>(s, h0, h1, 0.0), ok));
    return Limbs(vec4<u32>(w0.x, w1.x, w2.x, w3.x), vec4<u32>(w0.y, w1.y, w2.y, w3.y), vec4<u32>(w0.z, w1.z, w2.z, w3.z),
                 vec4<u32>(w4.x, w5.x, w6.x, w7.x), vec4<u32>(w4.y, w5.y, w6.y, w7.y), vec4<u32>(w4.z, w5.z, w6.z, w7.z), info);
}

// Block b of the x row starting at vec4 word v (f32 bits, x_v4): its eight vec4 loads issued
// together (straight-line: no private array).
fn limbs_at(v: u32) -> Limbs {
    return to_limbs(bitcast<vec4<f32>>(x_v4[v]), bitcast<vec4<f32>>(x_v4[v + 1u]), bitcast<vec4<f32>>(x_v4[v + 2u]), bitcast<vec4<f32>>(x_v4[v + 3u]),
                    bitcast<vec4<f32>>(x_v4[v + 4u]), bitcast<vec4<f32>>(x_v4[v + 5u]), bitcast<vec4<f32>>(x_v4[v + 6u]), bitcast<vec4<f32>>(x_v4[v + 7u]));
}
