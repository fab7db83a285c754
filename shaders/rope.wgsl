// NeoX rotate-half RoPE on the first R = rotary_dim dims of each head; dims R.. pass through.
//   y[i]     = x[i] cos - x[i + R/2] sin
//   y[i+R/2] = x[i + R/2] cos + x[i] sin          for i < R/2, cos/sin = table[pos[t], i]
// x and y are [T, H, Dh]; pos [T] u32; cos, sin [P, R/2] f32. Math in f32.
// Work items are per head: the first ROT_ITEMS = ceil(half/2) items each rotate the two adjacent
// pairs (2q, 2q+1) and (2q+half, 2q+1+half); the next ceil((Dh-R)/2) items each copy two adjacent
// pass-through dims. Adjacent outputs go out with st2 (a whole word for 16-bit, where aligned).
// A position past the table (the host reference errors there) makes the rotary dims NaN.
// Bindings: x (read), pos (read, u32), cos (read, f32), sin (read, f32), y (write).

struct Params {
    offs: array<vec4<u32>, 2>,
    n: u32,          // total work items: T * H * items
    h: u32,          // heads
    dh: u32,         // head dim
    half: u32,       // R / 2
    npos: u32,       // P (rows of the cos/sin tables)
    items: u32,      // work items per head
    rot_items: u32,  // of which rotate: ceil(half / 2)
    _pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn rope(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg) * WG + lid;
    if (g >= p.n) {
        return;
    }
    let head = g / p.items;          // t * H + h
    let q = g - head * p.items;
    let base = head * p.dh;
    if (q >= p.rot_items) {
        // pass-through dims, two at a time
        let c = 2u * p.half + 2u * (q - p.rot_items);
        if (c + 1u < p.dh) {
            if (RAW) {
                st2bits_y(base + c, ldbits_x(base + c), ldbits_x(base + c + 1u));
            } else {
                st2_y(base + c, ld_x(base + c), ld_x(base + c + 1u));
            }
        } else {
            if (RAW) {
                stbits_y(base + c, ldbits_x(base + c));
            } else {
                st_y(base + c, ld_x(base + c));
            }
        }
        return;
    }
    let t = head / p.h;
    let pos = ld_pos(t);
    let i0 = 2u * q;
    let two = i0 + 1u < p.half;
    if (pos >= p.npos) {
        let nan = bitcast<f32>(0x7fc00000u | (pos & 0u));
        if (two) {
            st2_y(base + i0, nan, nan);
            st2_y(base + i0 + p.half, nan, nan);
        } else {
            st_y(base + i0, nan);
            st_y(base + i0 + p.half, nan);
        }
        return;
    }
    let tb = pos * p.half;
    let c0 = ld_cos(tb + i0);
    let s0 = ld_sin(tb + i0);
    let a0 = ld_x(base + i0);
    let b0 = ld_x(base + i0 + p.half);
    let lo0 = fma(a0, c0, -(b0 * s0));
    let hi0 = fma(b0, c0, a0 * s0);
    if (two) {
        let i1 = i0 + 1u;
        let c1 = ld_cos(tb + i1);
        let s1 = ld_sin(tb + i1);
        let a1 = ld_x(base + i1);
        let b1 = ld_x(base + i1 + p.half);
        st2_y(base + i0, lo0, fma(a1, c1, -(b1 * s1)));
        st2_y(base + i0 + p.half, hi0, fma(b1, c1, a1 * s1));
    } else {
        st_y(base + i0, lo0);
        st_y(base + i0 + p.half, hi0);
    }
}
