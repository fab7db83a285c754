// Butterfly sum over the subgroup, shared by the matvec entries' `sg` variants (matvec.wgsl,
// qmatvec.wgsl, qmatvec_xs.wgsl; linear/ and quant/ prepend it). Shuffles rather than the
// reduction builtin: naga 30 rejects the `enable subgroups;` directive the builtin needs.
fn sg_sum(v: f32, sgs: u32) -> f32 {
    var s = v;
    for (var d = sgs / 2u; d > 0u; d >>= 1u) {
        s += subgroupShuffleXor(s, d);
    }
    return s;
}
