// The integer arithmetic of Op::Sample (prepended to sample.wgsl; backend/cpu/sample.rs is the same
// arithmetic in Rust): order keys, 64-bit integers as (lo, hi) pairs, and a token's weight
// 2^-((m - l) * scale) in Q45 from one correctly rounded f32 subtraction and product (denormals
// flushed by hand), a Q31 table and a cubic in Q32: integer operations only, so every device
// weighs every token alike, whatever its exp or its denormal mode.

const POS_INF: u32 = 0x7f800000u;
const NEG_INF: u32 = 0xff800000u;
const TOP_BITS: u32 = 45u;
const ONE24: u32 = 0x1000000u;
const LN2_Q32: u32 = 2977044472u;

// 2^(-j/64) in Q31, j = 0..64 (the same numbers as EXP2_TABLE in backend/cpu/sample.rs)
var<private> EXP2: array<u32, 64> = array<u32, 64>(
    2147483648u, 2124350982u, 2101467502u, 2078830522u, 2056437387u, 2034285470u, 2012372174u, 1990694927u,
    1969251188u, 1948038440u, 1927054196u, 1906295993u, 1885761398u, 1865448001u, 1845353420u, 1825475297u,
    1805811301u, 1786359126u, 1767116489u, 1748081133u, 1729250827u, 1710623359u, 1692196547u, 1673968228u,
    1655936265u, 1638098541u, 1620452965u, 1602997467u, 1585730000u, 1568648537u, 1551751076u, 1535035634u,
    1518500250u, 1502142985u, 1485961921u, 1469955159u, 1454120821u, 1438457051u, 1422962010u, 1407633882u,
    1392470869u, 1377471191u, 1362633090u, 1347954824u, 1333434672u, 1319070932u, 1304861917u, 1290805962u,
    1276901417u, 1263146652u, 1249540052u, 1236080024u, 1222764986u, 1209593378u, 1196563654u, 1183674286u,
    1170923762u, 1158310587u, 1145833280u, 1133490379u, 1121280436u, 1109202018u, 1097253708u, 1085434106u,);

// Order-preserving key of an f32: NaN -> 1, below every number; -0 -> the key of +0.
fn okey(b: u32) -> u32 {
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 1u;
    }
    if (b == 0x80000000u) {
        return 0x80000000u;
    }
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn unkey(k: u32) -> u32 {
    return select(~k, k & 0x7fffffffu, k >= 0x80000000u);
}

// (ka, ia) strictly after (kb, ib) in the order
fn after(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka < kb || (ka == kb && ia > ib);
}

// the high 32 bits of a * b
fn mulhi(a: u32, b: u32) -> u32 {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}

// 64-bit unsigned integers as (lo, hi)
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn ge64(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y > b.y || (a.y == b.y && a.x >= b.x);
}

// floor(x * f / 2^24) for f <= 2^24 (a 96-bit product, shifted)
fn scale24(x: vec2<u32>, f: u32) -> vec2<u32> {
    let l_hi = mulhi(x.x, f);
    let w1 = l_hi + x.y * f;
    let w2 = mulhi(x.y, f) + select(0u, 1u, w1 < l_hi);
    return vec2<u32>(((x.x * f) >> 24u) | (w1 << 8u), (w1 >> 24u) | (w2 << 8u));
}

// a subnormal (or zero) becomes +0, whether or not this device flushes them
fn flushb(b: u32) -> u32 {
    return select(b, 0u, (b & 0x7f800000u) == 0u);
}

// 2^-z in Q45 for z >= 0 given by its bits; 0 once z >= 46
fn exp2_neg_q45(zb: u32) -> vec2<u32> {
    var n = 0u;
    var f = 0u;
    if (zb >= 0x00800000u) {
        let e = i32(zb >> 23u) - 127;
        if (e >= 6) {
            return vec2<u32>(0u);
        }
        let mant = (zb & 0x7fffffu) | 0x800000u;
        if (e >= 0) {
            n = mant >> u32(23 - e);
            f = mant << u32(9 + e);
        } else {
            let s = u32(-1 - e);
            f = select(0u, (mant << 8u) >> min(s, 31u), s < 32u);
        }
    }
    if (n > TOP_BITS) {
        return vec2<u32>(0u);
    }
    let t = EXP2[f >> 26u];
    // 2^-r = e^-a for the remaining r < 2^-6, a = r ln 2: 1 - (a - a^2/2 + a^3/6), in Q32
    let a = mulhi(f & 0x03ffffffu, LN2_Q32);
    let a2 = mulhi(a, a);
    let a3 = mulhi(a2, a);
    let e31 = t - mulhi(t, a - (a2 >> 1u) + a3 / 6u);
    let lo = e31 << (TOP_BITS - 31u);
    let hi = e31 >> (63u - TOP_BITS);
    if (n == 0u) {
        return vec2<u32>(lo, hi);
    }
    if (n < 32u) {
        return vec2<u32>((lo >> n) | (hi << (32u - n)), hi >> n);
    }
    return vec2<u32>(hi >> (n - 32u), 0u);
}

// The weight of a logit (bits lb) in a row whose maximum has bits mb, at `scale`.
fn weight(lb: u32, mb: u32, scale: f32) -> vec2<u32> {
    if ((lb & 0x7fffffffu) > POS_INF || lb == NEG_INF || mb == NEG_INF) {
        return vec2<u32>(0u);
    }
    if (mb == POS_INF) {
        return select(vec2<u32>(0u), vec2<u32>(0u, 1u << (TOP_BITS - 32u)), lb == POS_INF);
    }
    let d = flushb(bitcast<u32>(bitcast<f32>(flushb(mb)) - bitcast<f32>(flushb(lb))));
    return exp2_neg_q45(flushb(bitcast<u32>(bitcast<f32>(d) * scale)));
}

// A number in [0, 1] as a 24-bit fraction: floor(x 2^24); 2^24 for x >= 1 (and NaN), 0 below 0.
fn fraction24(b: u32) -> u32 {
    if ((b & 0x80000000u) != 0u) {
        return 0u;
    }
    if (b >= 0x3f800000u) {
        return ONE24;
    }
    return u32(bitcast<f32>(b) * 16777216.0);
}

