/// y[m, n] = sum_k x[m, k] * w[n, k], f64 accumulation.
pub fn linear(x: &[f32], w: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut y = vec![0f32; m * n];
    for i in 0..m {
        let xr = &x[i * k..(i + 1) * k];
        for j in 0..n {
            let wr = &w[j * k..(j + 1) * k];
            let s: f64 = xr.iter().zip(wr).map(|(&a, &b)| a as f64 * b as f64).sum();
            y[i * n + j] = s as f32;
        }
    }
    y
}
