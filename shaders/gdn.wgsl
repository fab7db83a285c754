// The gated delta rule (Qwen3.5 Gated DeltaNet): helpers shared by gdn_recurrent.wgsl,
// gdn_chunk_prep.wgsl and gdn_chunk_scan.wgsl (prepended to each by src/backend/wgpu/gdn.rs).
//
// Inputs for token t, value head h (key head kh = h / group, group = nv / nk: transformers'
// repeat_interleave): the conv output row qkv[t] holds [q (nk*dk) | k (nk*dk) | v (nv*dv)], each
// head-major. q and k are l2-normalised (x / sqrt(sum x^2 + 1e-6)), q also scaled by 1/sqrt(dk);
// beta = sigmoid(b[t, h]); g = -exp(a_log[h]) * softplus(a[t, h] + dt_bias[h]).
// The state S_h is [dk, dv] (S[h, i, j]: i over the key dim, j over the value dim), f32.
// One step:  S *= exp(g);  delta = (v - kᵀS) * beta;  S += k deltaᵀ;  o = qᵀS.
// The value columns j of S evolve independently, so kernels split dv across workgroups.

const L2_EPS = 1e-6;

// torch.nn.functional.softplus (threshold 20); exp(x) below -15 where 1 + exp(x) rounds to 1.
fn softplus(x: f32) -> f32 {
    if (x > 20.0) {
        return x;
    }
    if (x < -15.0) {
        return exp(x);
    }
    return log(1.0 + exp(x));
}

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}
