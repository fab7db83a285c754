// The reductions both sample modules (sample_head.wgsl, sample.wgsl) share, prepended to each by
// sample.rs after sample_weight.wgsl: the best (key, id) of a workgroup's WG offers, the larger
// key first and ties to the lower id (the order is total, so the tree's shape cannot change the
// winner); and the f32 sum of WG shares in one fixed tree order. WG comes from the kernel's
// constants.

var<workgroup> red_k: array<u32, WG>;
var<workgroup> red_i: array<u32, WG>;
var<workgroup> red_f: array<f32, WG>;

// Invocation lid offers (bk, bi); on return red_k[0], red_i[0] hold the winner for every
// invocation (the tree's last barrier has passed). Every invocation calls it (barriers).
fn tree_best(lid: u32, bk: u32, bi: u32) {
    red_k[lid] = bk;
    red_i[lid] = bi;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            let k2 = red_k[lid + h];
            let i2 = red_i[lid + h];
            if (k2 > red_k[lid] || (k2 == red_k[lid] && i2 < red_i[lid])) {
                red_k[lid] = k2;
                red_i[lid] = i2;
            }
        }
        workgroupBarrier();
    }
}

// Invocation lid's share s summed with the others' in the tree's fixed order; on return red_f[0]
// holds the sum for every invocation. Every invocation calls it (barriers).
fn tree_sum(lid: u32, s: f32) {
    red_f[lid] = s;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            red_f[lid] += red_f[lid + h];
        }
        workgroupBarrier();
    }
}
