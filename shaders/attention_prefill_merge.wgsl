// The merge of a long prefill's key partitions (attention.rs `parts`; attention_prefill_loop.wgsl
// with KP > 0): each partition's workgroups left, for each query row t and head h, the row
// softmax-normalized over the partition's keys (o_q) and its max score m_q and softmax sum l_q,
// at po[((q * T + t) * Hq + h) * (Dh + 2)] (o_q, then m_q, l_q). Row t sees keys 0..=n + t (n:
// merge_n_past(), the first query's position), so partitions 0..ceil((n + t + 1) / KP) each hold
// at least one of its keys, up to the grid's count ceil((Params.n_past + T) / KP), whose last
// partition took every key past it (attention_prefill_loop.wgsl); later ones are not read (they
// may not exist). Then
//   o = (sum_q o_q l_q exp(m_q - M)) / (sum_q l_q exp(m_q - M)),   M = max_q m_q
// One thread per output vec4 (t, h, d4). Bindings: po (read), o (write [T, Hq, Dh]), and for the
// paged kernel seqs (read). attention_parts.rs puts before this file
//   fn merge_n_past() -> u32   the first query's position: Params.n_past, or the paged kernel's
//                              from seqs (as paged_attention_prefill.wgsl reads it)
// Constant: WG (workgroup size).

struct Params {
    offs: array<vec4<u32>, 2>,
    t: u32,
    hq: u32,
    dh: u32,
    n_past: u32,
    kp: u32,
    keys: u32,       // the paged kernel's table length in keys (mb * bs)
    _pad1: u32,
    _pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn attention_prefill_merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                           @builtin(local_invocation_index) lid: u32) {
    let dh4 = p.dh / 4u;
    let e = group_index(wid, nwg) * WG + lid;
    if (e >= p.t * p.hq * dh4) {
        return;
    }
    let d = (e % dh4) * 4u;
    let th = e / dh4;              // t * Hq + h
    let t = th / p.hq;
    let np = min((merge_n_past() + t) / p.kp + 1u, (p.n_past + p.t + p.kp - 1u) / p.kp);
    let rs = p.dh + 2u;
    let stride = p.t * p.hq * rs;  // one partition's rows
    var mx = -3.0e38;
    for (var q = 0u; q < np; q++) {
        mx = max(mx, ld_po(q * stride + th * rs + p.dh));
    }
    var acc = vec4<f32>(0.0);
    var den = 0.0;
    for (var q = 0u; q < np; q++) {
        let at = q * stride + th * rs;
        let w = ld_po(at + p.dh + 1u) * exp(ld_po(at + p.dh) - mx);
        acc += w * vec4<f32>(ld_po(at + d), ld_po(at + d + 1u), ld_po(at + d + 2u), ld_po(at + d + 3u));
        den += w;
    }
    let o = acc / den;
    let orow = th * p.dh + d;
    st2_o(orow, o.x, o.y);
    st2_o(orow + 2u, o.z, o.w);
}
