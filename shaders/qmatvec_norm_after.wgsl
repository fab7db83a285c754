// qmatvec's epilogue for linear_add_rms_norm over one row (quant/norm_after.rs; batch invariance
// off): y = x W^T as qmatvec stores it, then sum = a + y and h = rms_norm(sum) * nw (or * (1 + nw))
// in the same dispatch, by the last workgroup to finish, instead of an add_rms_norm dispatch after
// it: no workgroup waits for another. Each workgroup also stores its rows of y through atomics into
// sc (device-scope words, which skip the non-coherent caches a plain load may hit), passes
// storageBarrier (a device-scope release) and adds 1 to the counter sc[0]; the one that sees
// groups - 1 there resets it to 0 for the next dispatch, passes storageBarrier (the acquire) and
// reads the whole row of y from sc. Its threads take the row's elements in strides of WG, store the
// sum and add its squares by wg_sum (wg_tree.wgsl, which quant/launch.rs puts before this file);
// each then reads back the sums it stored itself (sum may share a buffer with a) for h.
// Bindings besides qmatvec's: a, nw (read), sum, h (write), sc (atomic: the counter, then y).
// Params: eps in p._p0 (its bits). Constant: UNIT_OFFSET.

var<workgroup> last_w: u32;

fn keep_y(i: u32, v: f32) {
    atst_sc(1u + i, bitcast<u32>(v));
}

fn after_rows(lid: u32, groups: u32) {
    storageBarrier();
    if (lid == 0u) {
        last_w = atadd_sc(0u, 1u);
    }
    if (workgroupUniformLoad(&last_w) != groups - 1u) {
        return;
    }
    if (lid == 0u) {
        atst_sc(0u, 0u);
    }
    storageBarrier();
    var ss = 0.0;
    for (var i = lid; i < p.n; i += WG) {
        let v = ld_a(i) + bitcast<f32>(atld_sc(1u + i));
        st_sum(i, v);
        ss += v * v;
    }
    let inv = 1.0 / sqrt(wg_sum(ss, lid) / f32(p.n) + bitcast<f32>(p._p0));
    for (var i = lid; i < p.n; i += WG) {
        var w = ld_nw(i);
        if (UNIT_OFFSET) {
            w += 1.0;
        }
        st_h(i, ld_sum(i) * inv * w);
    }
}
