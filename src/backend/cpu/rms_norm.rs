/// RMSNorm over the last dim `d`: x / sqrt(mean(x^2) + eps) * w (or * (1 + w)). f64 accumulation.
pub fn rms_norm(x: &[f32], w: &[f32], d: usize, eps: f32, unit_offset: bool) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
        let ms: f64 = xr.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / d as f64;
        let inv = 1.0 / (ms + eps as f64).sqrt();
        for j in 0..d {
            let g = if unit_offset { 1.0 + w[j] as f64 } else { w[j] as f64 };
            yr[j] = (xr[j] as f64 * inv * g) as f32;
        }
    }
    y
}

/// Gated RMSNorm over the last dim `d`: x / sqrt(mean(x^2) + eps) * w * silu(z). f64.
pub fn rms_norm_gated(x: &[f32], z: &[f32], w: &[f32], d: usize, eps: f32) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    for ((xr, zr), yr) in x.chunks(d).zip(z.chunks(d)).zip(y.chunks_mut(d)) {
        let ms: f64 = xr.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / d as f64;
        let inv = 1.0 / (ms + eps as f64).sqrt();
        for j in 0..d {
            yr[j] = (xr[j] as f64 * inv * w[j] as f64 * super::causal_conv1d::silu(zr[j] as f64)) as f32;
        }
    }
    y
}
