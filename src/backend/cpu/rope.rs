use crate::error::{Error, Result};

/// NeoX rotate-half RoPE on the first `rot` dims of each head:
/// `y[i] = x[i] cos - x[i + rot/2] sin`, `y[i + rot/2] = x[i + rot/2] cos + x[i] sin`, for i < rot/2.
pub fn rope(
    x: &[f32],
    pos: &[u32],
    cos: &[f32],
    sin: &[f32],
    t: usize,
    h: usize,
    dh: usize,
    rot: usize,
) -> Result<Vec<f32>> {
    let half = rot / 2;
    let max_pos = cos.len() / half;
    let mut y = x.to_vec();
    for ti in 0..t {
        let p = pos[ti] as usize;
        if p >= max_pos {
            return Err(Error::Other(format!(
                "rope: position {p} past the table of {max_pos} positions"
            )));
        }
        for hi in 0..h {
            let base = (ti * h + hi) * dh;
            for i in 0..half {
                let (c, s) = (cos[p * half + i] as f64, sin[p * half + i] as f64);
                let (a, b) = (x[base + i] as f64, x[base + i + half] as f64);
                y[base + i] = (a * c - b * s) as f32;
                y[base + i + half] = (b * c + a * s) as f32;
            }
        }
    }
    Ok(y)
}
