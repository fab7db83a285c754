// paged_gated_attention split (paged_gated_split.rs), step 3: o = att * sigmoid(gate), one thread
// an element; the gate is the second half of qg [T, Hq, 2 Dh].
// Bindings: qg, att, bt, seqs (read; bt and seqs only for the shared head), o (write).
// Constant: WG.

@compute @workgroup_size(WG)
fn paged_gated_out(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let i = group_index(wid, nwg) * WG + lid;
    if (i >= p.t * p.hq * p.dh) {
        return;
    }
    let gate = ld_qg((i / p.dh) * 2u * p.dh + p.dh + i % p.dh);
    st_o(i, ld_att(i) / (1.0 + exp(-gate)));
}
