/// Row softmax over `c` columns, f64.
pub fn softmax(x: &[f32], c: usize) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    for (xr, yr) in x.chunks(c).zip(y.chunks_mut(c)) {
        let mx = xr.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let z: f64 = xr.iter().map(|&v| (v as f64 - mx).exp()).sum();
        for (o, &v) in yr.iter_mut().zip(xr) {
            *o = ((v as f64 - mx).exp() / z) as f32;
        }
    }
    y
}

/// Index of each row's maximum; the lowest index wins ties. NaN is never chosen over a number.
pub fn argmax(x: &[f32], c: usize) -> Vec<u32> {
    x.chunks(c)
        .map(|r| {
            let mut best = 0usize;
            for (j, &v) in r.iter().enumerate() {
                if v > r[best] || (r[best].is_nan() && !v.is_nan()) {
                    best = j;
                }
            }
            best as u32
        })
        .collect()
}

/// The k largest of each row, descending; ties go to the lower index.
pub fn topk(x: &[f32], c: usize, k: usize) -> (Vec<f32>, Vec<u32>) {
    let (mut vals, mut idx) = (Vec::new(), Vec::new());
    for r in x.chunks(c) {
        let mut order: Vec<usize> = (0..c).collect();
        order.sort_by(|&a, &b| {
            r[b].partial_cmp(&r[a])
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        for &j in &order[..k] {
            vals.push(r[j]);
            idx.push(j as u32);
        }
    }
    (vals, idx)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn argmax_ties_take_lowest() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 2.0], 4), vec![1]);
    }
    #[test]
    fn topk_sorted_with_ties() {
        let (v, i) = topk(&[1.0, 3.0, 3.0, 2.0], 4, 3);
        assert_eq!(i, vec![1, 2, 3]);
        assert_eq!(v, vec![3.0, 3.0, 2.0]);
    }
}
