// Read-bandwidth probe, 16-byte variant (bandwidth.rs takes the faster of this and
// bandwidth.wgsl, whose Params it is given): each invocation sums a strided sweep of `x` read as
// vec4 words, four loads in flight, coalesced across the workgroup, and writes one word so
// nothing is optimised away.
// Bindings: x (read as vec4<u32> words: x_v4), y (write, u32, one per invocation).

@compute @workgroup_size(256)
fn read_sweep4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 256u;
    if (t >= p.total_threads) {
        return;
    }
    let n = p.n_words / 4u;
    var acc = vec4<u32>(0u);
    var i = t;
    let stride = p.total_threads;
    loop {
        if (i + 3u * stride >= n) {
            break;
        }
        acc ^= x_v4[i] + x_v4[i + stride] + x_v4[i + 2u * stride] + x_v4[i + 3u * stride];
        i += 4u * stride;
    }
    for (; i < n; i += stride) {
        acc ^= x_v4[i];
    }
    stbits_y(t, acc.x ^ acc.y ^ acc.z ^ acc.w);
}
