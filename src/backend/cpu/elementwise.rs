/// silu(g) * u = g / (1 + exp(-g)) * u, in f64.
pub fn swiglu(g: &[f32], u: &[f32]) -> Vec<f32> {
    g.iter()
        .zip(u)
        .map(|(&g, &u)| (g as f64 / (1.0 + (-(g as f64)).exp()) * u as f64) as f32)
        .collect()
}

pub fn add(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(&a, &b)| (a as f64 + b as f64) as f32).collect()
}
