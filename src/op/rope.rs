//! RoPE's frequency tables, beside the ops that read them (`Op::Rope`, `Op::RmsNormRope`,
//! `Op::GatedAttention`): inverse frequencies (with Llama 3's scaling) and the cos/sin tables the
//! models upload, computed in f64 on the host and rounded once to f32.

/// Llama 3.x's frequency-dependent RoPE scaling (`rope_type: "llama3"`).
#[derive(Clone, Debug, PartialEq)]
pub struct Llama3Rope {
    pub factor: f64,
    pub low_freq_factor: f64,
    pub high_freq_factor: f64,
    pub original_max_position_embeddings: f64,
}

/// RoPE inverse frequencies of `rotary_dim` dims: theta^(-2i/d), with Llama 3's scaling applied.
pub fn rope_inv_freq(theta: f64, rotary_dim: usize, scaling: Option<&Llama3Rope>) -> Vec<f64> {
    (0..rotary_dim / 2)
        .map(|i| {
            let inv = theta.powf(-(2.0 * i as f64) / rotary_dim as f64);
            let Some(s) = scaling else { return inv };
            let wavelen = 2.0 * std::f64::consts::PI / inv;
            let (low_wl, high_wl) = (
                s.original_max_position_embeddings / s.low_freq_factor,
                s.original_max_position_embeddings / s.high_freq_factor,
            );
            if wavelen < high_wl {
                inv
            } else if wavelen > low_wl {
                inv / s.factor
            } else {
                let smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor)
                    / (s.high_freq_factor - s.low_freq_factor);
                (1.0 - smooth) * inv / s.factor + smooth * inv
            }
        })
        .collect()
}

/// RoPE cos/sin tables [max_pos, rotary_dim/2], computed in f64 and rounded once to f32.
/// `inv_freq[i] = theta^(-2i/rotary_dim)`; `angle = pos * inv_freq[i]`.
pub fn rope_tables(theta: f64, rotary_dim: usize, max_pos: usize) -> (Vec<f32>, Vec<f32>) {
    rope_tables_of(&rope_inv_freq(theta, rotary_dim, None), max_pos)
}

/// cos/sin tables [max_pos, half] of the given inverse frequencies.
pub fn rope_tables_of(inv_freq: &[f64], max_pos: usize) -> (Vec<f32>, Vec<f32>) {
    let half = inv_freq.len();
    let mut cos = Vec::with_capacity(max_pos * half);
    let mut sin = Vec::with_capacity(max_pos * half);
    for p in 0..max_pos {
        for &inv in inv_freq {
            let a = p as f64 * inv;
            cos.push(a.cos() as f32);
            sin.push(a.sin() as f32);
        }
    }
    (cos, sin)
}
