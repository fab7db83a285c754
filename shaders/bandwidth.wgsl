// Read-bandwidth probe (the roofline every kernel is held to): each invocation sums a strided
// sweep of `x` (coalesced across the workgroup) and writes one word so nothing is optimised away.
// Bindings: x (read, u32), y (write, u32, one per invocation).

struct Params {
    offs: array<vec4<u32>, 2>,
    n_words: u32,
    total_threads: u32,
    _pad0: u32,
    _pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(256)
fn read_sweep(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 256u;
    if (t >= p.total_threads) {
        return;
    }
    var acc = 0u;
    var i = t;
    let stride = p.total_threads;
    loop {
        if (i + 3u * stride >= p.n_words) {
            break;
        }
        acc ^= x_buf[i] + x_buf[i + stride] + x_buf[i + 2u * stride] + x_buf[i + 3u * stride];
        i += 4u * stride;
    }
    for (; i < p.n_words; i += stride) {
        acc ^= x_buf[i];
    }
    stbits_y(t, acc);
}
