/// Causal GQA attention over a cache. q [t, hq, dh], k/v [S, hkv, dh] (only the first n_past + t
/// rows are read). Query ti at position n_past + ti sees keys 0..=n_past + ti. f64 softmax.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    t: usize,
    hq: usize,
    hkv: usize,
    dh: usize,
    n_past: usize,
    scale: f32,
) -> Vec<f32> {
    let group = hq / hkv;
    let mut o = vec![0f32; t * hq * dh];
    for ti in 0..t {
        let kv_len = n_past + ti + 1;
        for h in 0..hq {
            let kh = h / group;
            let qr = &q[(ti * hq + h) * dh..(ti * hq + h + 1) * dh];
            let scores: Vec<f64> = (0..kv_len)
                .map(|s| {
                    let kr = &k[(s * hkv + kh) * dh..(s * hkv + kh + 1) * dh];
                    qr.iter().zip(kr).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() * scale as f64
                })
                .collect();
            let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = scores.iter().map(|s| (s - mx).exp()).collect();
            let z: f64 = e.iter().sum();
            for d in 0..dh {
                let acc: f64 = (0..kv_len).map(|s| e[s] * v[(s * hkv + kh) * dh + d] as f64).sum();
                o[(ti * hq + h) * dh + d] = (acc / z) as f32;
            }
        }
    }
    o
}
