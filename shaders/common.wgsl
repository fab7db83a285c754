// Shared helpers, prepended to every kernel (after the generated binding accessors).
// 16-bit floats live packed two to a u32 word, low half first (little endian, like the host bytes).

// f16 bits -> f32, exact (subnormals, inf and NaN with its payload included), integer arithmetic
// and one exact float product, without branches: the decode runs inside unrolled loops (q4_k's and
// q4_1's block scales), where a branch splits the trips; with one, the norm-fused matvecs of an
// f16 model (two norm weights a step, before vectors were widened on load) ran several
// microseconds a dispatch slower than their bf16 twins. Not unpack2x16float: a GPU may quiet a
// NaN or flush a subnormal there (the cast cases with special values catch it).
fn f16_bits_to_f32(h: u32) -> f32 {
    let em = h & 0x7fffu;
    // exponent rebiased by 127 - 15 = 112; an inf / NaN exponent (31) goes to 255 (112 more)
    var b = (em << 13u) + 0x38000000u;
    b = select(b, b + 0x38000000u, em >= 0x7c00u);
    // zero or subnormal: m * 2^-24, a normal f32 (or 0) whatever the device does with subnormals
    b = select(b, bitcast<u32>(f32(em) * 5.9604644775390625e-8), em < 0x400u);
    return bitcast<f32>(((h & 0x8000u) << 16u) | b);
}

// f32 -> f16 bits, round to nearest even; overflow to inf; NaN stays NaN (quiet, top mantissa bits kept).
fn f32_to_f16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    let s = (b >> 16u) & 0x8000u;
    let e = (b >> 23u) & 0xffu;
    let m = b & 0x7fffffu;
    if (e == 255u) {
        return s | 0x7c00u | select(0u, 0x200u | (m >> 13u), m != 0u);
    }
    let ue = i32(e) - 127 + 15;
    if (ue >= 31) {
        return s | 0x7c00u;
    }
    if (ue <= 0) {
        if (ue < -10) {
            return s;
        }
        let mm = m | 0x800000u;
        let shift = u32(14 - ue);
        var r = mm >> shift;
        let rem = mm & ((1u << shift) - 1u);
        let halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (r & 1u) == 1u)) {
            r = r + 1u;
        }
        return s | r;
    }
    var r = (u32(ue) << 10u) | (m >> 13u);
    let rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) == 1u)) {
        r = r + 1u;
    }
    return s | r;
}

// f32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN. Twin of dtype::f32_to_bf16_bits.
fn f32_to_bf16_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return (b >> 16u) | 0x40u;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

fn bf16_bits_to_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}

// Linear workgroup index over a 2D grid (dispatches past 65535 groups spill into y).
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}
