// q4_k matvec lane, integer-dot path (quant/ picks it for f32 x when rows start on 16 bytes
// and K >= 2048 in a big enough matrix; entries qmatvec.wgsl after the xlimbs pre-pass, or
// qmatvec_xs.wgsl). A slot is one 32-byte nibble group g of a super-block (two vec4 loads): all
// 32 elements of sub-block A = 2g (low nibbles) and of B = 2g + 1 (high), so one header decode
// serves 64 elements; 4 slots a super-block, a subgroup reads 8 super-blocks' nibbles in one
// run. x comes as byte limbs (limbs.wgsl) and each word of nibbles meets its x values in packed
// 4 x 8-bit dot products (dot4U8Packed / dot4I8Packed: one instruction where the adapter has
// integer dot products).
// The integer sums are exact (|sum| <= 32 * 15 * 2^22 < 2^31); a sub-block's result is
// (d sc) s X-sum - (dmin m) x-sum.

const SLOTS = 4u;

struct X {
    // limbs of A (halves 0 and 1: L0, L1, L2 each) and of B
    a0: vec4<u32>, a1: vec4<u32>, a2: vec4<u32>, a3: vec4<u32>, a4: vec4<u32>, a5: vec4<u32>,
    b0: vec4<u32>, b1: vec4<u32>, b2: vec4<u32>, b3: vec4<u32>, b4: vec4<u32>, b5: vec4<u32>,
    // block scales of A and B (B's divided by 256, the scale slot it meets), x sums of A and B
    // (B's divided by 256 too)
    sa: f32, sb: f32, ma: f32, mb: f32,
}

// acc + sum(q * l) over four words of bytes, unsigned / signed (a chain, so each product can
// accumulate in the dot instruction).
fn du(acc: u32, q: vec4<u32>, l: vec4<u32>) -> u32 {
    return acc + dot4U8Packed(q.x, l.x) + dot4U8Packed(q.y, l.y) + dot4U8Packed(q.z, l.z) + dot4U8Packed(q.w, l.w);
}
fn di(acc: i32, q: vec4<u32>, l: vec4<u32>) -> i32 {
    return acc + dot4I8Packed(q.x, l.x) + dot4I8Packed(q.y, l.y) + dot4I8Packed(q.z, l.z) + dot4I8Packed(q.w, l.w);
}

// sum(q * X) over a sub-block: q0, q1 its 32 nibbles as bytes (halves 0, 1), l0..l5 its x limbs;
// exact in i32, then one rounding to f32.
fn limb_dot(q0: vec4<u32>, q1: vec4<u32>, l0: vec4<u32>, l1: vec4<u32>, l2: vec4<u32>, l3: vec4<u32>, l4: vec4<u32>, l5: vec4<u32>) -> f32 {
    let s0 = du(du(0u, q0, l0), q1, l3);
    let s1 = du(du(0u, q0, l1), q1, l4);
    let s2 = di(di(0i, q0, l2), q1, l5);
    return f32(bitcast<i32>(s0 + (s1 << 8u)) + (s2 << 16u));
}

// (scale A, 256 scale B, min A, 256 min B) of the sub-block pair 2g, 2g + 1 from the scale words
// s0, s1, s2 (layout: q4_k.wgsl scale_min), both at once from 16-bit windows.
fn scale_min_pair(s0: u32, s1: u32, s2: u32, g: u32) -> vec4<f32> {
    let sh = (g & 1u) * 16u;
    let ls = s0 >> sh;
    let lm = s1 >> sh;
    let t = s2 >> sh;
    let hi = g >= 2u;
    let sc = select(ls & 0x3f3fu, (t & 0x0f0fu) | ((ls >> 2u) & 0x3030u), hi);
    let mn = select(lm & 0x3f3fu, ((t >> 4u) & 0x0f0fu) | ((lm >> 2u) & 0x3030u), hi);
    let v = vec4<u32>(sc & 0xffu, sc & 0xff00u, mn & 0xffu, mn & 0xff00u) | vec4<u32>(MAGIC);
    return bitcast<vec4<f32>>(v) - vec4<f32>(8388608.0);
}

fn slot_dot(rb: u32, c: u32, x: X) -> f32 {
    let a = (rb >> 4u) + (c >> 2u) * 9u;
    let g = c & 3u;
    let hd = w_v4[a];
    let q0 = w_v4[a + 1u + 2u * g];
    let q1 = w_v4[a + 2u + 2u * g];
    let m = vec4<u32>(0x0f0f0f0fu);
    let ia = limb_dot(q0 & m, q1 & m, x.a0, x.a1, x.a2, x.a3, x.a4, x.a5);
    let ib = limb_dot((q0 >> vec4<u32>(4u)) & m, (q1 >> vec4<u32>(4u)) & m, x.b0, x.b1, x.b2, x.b3, x.b4, x.b5);
    let dd = unpack2x16float(hd.x);
    let sm = scale_min_pair(hd.y, hd.z, hd.w, g);
    return dd.x * (sm.x * x.sa * ia + sm.y * x.sb * ib) - dd.y * (sm.z * x.ma + sm.w * x.mb);
}

// Slot c of the x row starting at element xr: the limbs of sub-blocks A and B. The entry gives
// `xbase(xr)` (the row's first limb word), `xstride()` / `xslot()` (words from one of a slot's
// 14 words to the next / from one slot to the next: S and 1 in limbs.wgsl's slot-major order,
// 1 and 14 slot after slot) and `xlimb(i)` (limb vec4 word i): the pre-pass's buffer bound as x
// (qmatvec.wgsl) or the workgroup's copy (qmatvec_xs.wgsl).
fn xload(c: u32, xr: u32) -> X {
    let st = xstride();
    let va = xbase(xr) + c * xslot();
    let vb = va + 7u * st;
    let ia = bitcast<vec4<f32>>(xlimb(va + 6u * st));
    let ib = bitcast<vec4<f32>>(xlimb(vb + 6u * st));
    return X(xlimb(va), xlimb(va + st), xlimb(va + 2u * st), xlimb(va + 3u * st), xlimb(va + 4u * st), xlimb(va + 5u * st),
             xlimb(vb), xlimb(vb + st), xlimb(vb + 2u * st), xlimb(vb + 3u * st), xlimb(vb + 4u * st), xlimb(vb + 5u * st),
             ia.x, ib.x * 0.00390625, ia.y + ia.z, (ib.y + ib.z) * 0.00390625);
}
