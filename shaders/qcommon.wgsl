// Block-quantized weights (GGUF layouts), kept quantized in device memory: the kernels read the
// raw blocks as u32 words and dequantize in registers. Prepended (after the binding prelude) to
// one type file (q8_0.wgsl, q4_0.wgsl, q4_1.wgsl, q4_k.wgsl, q6_k.wgsl) and one entry file
// (qmatvec.wgsl, qembed.wgsl); quant/ puts them together.
// The weight binding is always `w` (an embedding table too), bound as vec4<u32> words (`w_v4`;
// `wd(i)` reads word i). Its blocks start at byte p.wbase of the buffer; row n (a whole number
// of blocks) at byte p.wbase + n * p.rowb. Blocks of 18 and 210 bytes start at 2 mod 4 every
// other block: fields are read with funnel shifts. q8_0 is regrouped on the device (q8_0.wgsl).
// Values come from bytes with the f32 magic number: bits 0x4b000000 | v are 2^23 + v exactly
// (v < 2^23), so one and/or and one subtraction turn a byte into a float (no int->float convert).

struct Params {
    offs: array<vec4<u32>, 2>,
    m: u32,      // linear: rows of x (M); embedding: tokens (T)
    n: u32,      // rows of w (N, or V of the table)
    k: u32,      // elements per w row (K, or D)
    wbase: u32,  // byte offset of w's first block in its buffer
    rowb: u32,   // bytes per w row
    first: u32,  // embedding_shard: vocabulary id of table row 0
    _p0: u32,
    _p1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// Word i of the weight binding.
fn wd(i: u32) -> u32 {
    return w_v4[i >> 2u][i & 3u];
}

const MAGIC = 0x4b000000u;
// (1, 256, 1, 256): the scale of the four lanes `bytes_f` returns; x vectors in the matvec are
// loaded times its inverse so that dot(x, bytes_f(..)) is the plain dot product.
const LANES = vec4<f32>(1.0, 256.0, 1.0, 256.0);
const UNLANES = vec4<f32>(1.0, 0.00390625, 1.0, 0.00390625);

// The four bytes of w as (b0, 256 * b1, b2, 256 * b3) - bias * LANES, exactly.
fn bytes_f(w: u32, bias: f32) -> vec4<f32> {
    let h = w >> 16u;
    let v = vec4<u32>(w & 0xffu, w & 0xff00u, h & 0xffu, h & 0xff00u) | vec4<u32>(MAGIC);
    return bitcast<vec4<f32>>(v) - (vec4<f32>(8388608.0) + bias * LANES);
}

// The four bytes of w as plain values b - bias (exact).
fn bytes_u(w: u32, bias: f32) -> vec4<f32> {
    return bytes_f(w, bias) * UNLANES;
}

// 32 bits at byte address a (a even; a & 2 selects a funnel shift of two words).
fn wu32(a: u32) -> u32 {
    let i = a >> 2u;
    let sh = (a & 2u) * 8u;
    return (wd(i) >> sh) | ((wd(i + 1u) << 16u) << (16u - sh));
}

// 128 bits at byte address a (a even), as four words.
fn wu32x4(a: u32) -> vec4<u32> {
    let i = a >> 2u;
    let sh = (a & 2u) * 8u;
    let s2 = 16u - sh;
    let w0 = wd(i);
    let w1 = wd(i + 1u);
    let w2 = wd(i + 2u);
    let w3 = wd(i + 3u);
    let w4 = wd(i + 4u);
    return vec4<u32>((w0 >> sh) | ((w1 << 16u) << s2), (w1 >> sh) | ((w2 << 16u) << s2),
                     (w2 >> sh) | ((w3 << 16u) << s2), (w3 >> sh) | ((w4 << 16u) << s2));
}

// The f16 at byte address a (a even), exactly.
fn wf16(a: u32) -> f32 {
    return f16_bits_to_f32((wd(a >> 2u) >> ((a & 2u) * 8u)) & 0xffffu);
}

// The f16 at byte address a (a even) through the hardware conversion (exact for every finite f16;
// the matvec's scales). wf16 above is the bit-exact software path the embedding uses.
fn wf16h(a: u32) -> f32 {
    return unpack2x16float(wd(a >> 2u) >> ((a & 2u) * 8u)).x;
}

// Low / high nibbles of each byte of w, as bytes.
fn lo_nib(w: u32) -> u32 {
    return w & 0x0f0f0f0fu;
}
fn hi_nib(w: u32) -> u32 {
    return (w >> 4u) & 0x0f0f0f0fu;
}
