// embedding / embedding_shard over a block-quantized table: y[t, c] = dequant(table[ids[t]])[c],
// dequantized exactly as the reference (wq4 from the type file). D is a whole number of blocks,
// so each invocation owns 4 adjacent elements of one row. Plain embedding: an id >= V gives a
// row of zeros. SHARD: the table holds vocabulary rows first .. first + V; rows of y whose id is
// outside are left untouched.
// Bindings: w (the table, read), ids (read, u32), y (write). Constants from quant/: WG, SHARD.

@compute @workgroup_size(WG)
fn qembedding(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let e = (group_index(wid, nwg) * WG + lid) * 4u;
    if (e >= p.m * p.k) {
        return;
    }
    let t = e / p.k;
    let c = e - t * p.k;
    let r = ld_ids(t) - p.first;   // wraps past the table for ids below first
    var v = vec4<f32>(0.0);
    if (r < p.n) {
        v = wq4(p.wbase + r * p.rowb, c);
    } else if (SHARD) {
        return;
    }
    st2_y(e, v.x, v.y);
    st2_y(e + 2u, v.z, v.w);
}
