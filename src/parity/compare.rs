//! Comparing a device's output with the CPU reference. The one tolerance table lives here.
use crate::dtype::DType;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tol {
    /// every bit equal
    Exact,
    /// sum (a-b)^2 / sum a^2 <= bound
    Nmse(f64),
}

/// The tolerance for an output of `family` in `dtype`. One place, so a loosened bound is a visible diff.
/// Float bounds come from the output rounding: bf16 has 8 bits of mantissa (NMSE of one rounding
/// ~ 2^-18 / 3), f16 11 bits, f32 24 bits plus reassociation in long reductions.
pub fn tolerance(family: &str, dtype: DType) -> Tol {
    match family {
        // the sampling ops make the reference's f32 operations one for one (their contracts in
        // src/op/mod.rs say how), so every device must agree bit for bit
        "embedding" | "embedding_shard" | "copy" | "cast" | "argmax" | "topk" | "kv_write" | "penalties" | "min_p" => {
            return Tol::Exact
        }
        _ => {}
    }
    if !dtype.is_float() {
        return Tol::Exact;
    }
    let base = match dtype {
        DType::F32 => 1e-11,
        DType::F16 => 2e-7,
        DType::BF16 => 1e-5,
        _ => unreachable!(),
    };
    // Attention and GEMM accumulate long dot products and (attention) exponentials in f32. The
    // gated delta rule carries its state through T steps (the chunked form through a 64 x 64
    // triangular inverse per chunk), in f32. The paged attention ops are attention (same bound).
    // Linear's GEMM on tensor cores (wgpu cooperative matrices, M >= 64) multiplies x as f16 hi +
    // lo and sums inside the matrix unit: nmse 1.5e-12 at K = 1024, 2.4e-11 at K = 4097 on the
    // H200 (the f32 matvec: ~1e-14; x as f16 alone: 4e-8, which this bound still fails).
    let factor = match family {
        "linear" | "linear_swiglu" | "linear_add_rms_norm" | "linear_rms_norm_rope_kv" => 10.0,
        "attention"
        | "gated_attention"
        | "paged_attention"
        | "paged_gated_attention"
        | "gdn_recurrent"
        | "gdn_chunked"
        | "gdn_batch"
        | "gdn_conv_norm" => 10.0,
        _ => 1.0,
    };
    Tol::Nmse(base * factor)
}

/// The outcome of one comparison: elements compared and the error measure.
#[derive(Clone, Debug)]
pub struct Compared {
    pub n: usize,
    pub nmse: f64,
}

/// Compares raw bytes of `dtype` under `tol`. Any NaN/Inf mismatch fails whatever the tolerance.
pub fn compare(dtype: DType, got: &[u8], want: &[u8], tol: Tol) -> Result<Compared, String> {
    if got.len() != want.len() {
        return Err(format!("length {} vs reference {}", got.len(), want.len()));
    }
    if dtype.is_quant() {
        return Err(format!("a {dtype} output: ops write float outputs only"));
    }
    let n = got.len() / dtype.size();
    if n == 0 {
        return Err("zero elements compared".into());
    }
    if !dtype.is_float() {
        let (g, w) = (dtype.decode_u32(got), dtype.decode_u32(want));
        if let Some(i) = (0..n).find(|&i| g[i] != w[i]) {
            let bad = (0..n).filter(|&i| g[i] != w[i]).count();
            return Err(format!(
                "{bad} of {n} differ; first at [{i}]: got {} want {}",
                g[i], w[i]
            ));
        }
        return Ok(Compared { n, nmse: 0.0 });
    }
    let (g, w) = (dtype.decode_f32(got), dtype.decode_f32(want));
    for i in 0..n {
        let (a, b) = (g[i], w[i]);
        if !a.is_finite() || !b.is_finite() {
            let same = (a.is_nan() && b.is_nan()) || a == b;
            if !same {
                return Err(format!("non-finite mismatch at [{i}]: got {a} want {b}"));
            }
        }
    }
    match tol {
        Tol::Exact => {
            let size = dtype.size();
            if let Some(i) = (0..n).find(|&i| got[i * size..(i + 1) * size] != want[i * size..(i + 1) * size]) {
                let bad = (0..n)
                    .filter(|&i| got[i * size..(i + 1) * size] != want[i * size..(i + 1) * size])
                    .count();
                return Err(format!(
                    "{bad} of {n} differ bitwise; first at [{i}]: got {} want {}",
                    g[i], w[i]
                ));
            }
            Ok(Compared { n, nmse: 0.0 })
        }
        Tol::Nmse(bound) => {
            let (mut num, mut den, mut worst, mut wi) = (0f64, 0f64, 0f64, 0usize);
            for i in 0..n {
                if !g[i].is_finite() {
                    continue;
                }
                let d = g[i] as f64 - w[i] as f64;
                num += d * d;
                den += w[i] as f64 * w[i] as f64;
                if d.abs() > worst {
                    worst = d.abs();
                    wi = i;
                }
            }
            let nmse = if den > 0.0 { num / den } else { num / n as f64 };
            if nmse.is_nan() || nmse > bound {
                return Err(format!(
                    "nmse {nmse:.3e} > {bound:.0e}; worst at [{wi}]: got {} want {}",
                    g[wi], w[wi]
                ));
            }
            Ok(Compared { n, nmse })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn nan_mismatch_fails_even_loose() {
        let a = DType::F32.encode_f32(&[1.0, f32::NAN]);
        let b = DType::F32.encode_f32(&[1.0, 2.0]);
        assert!(compare(DType::F32, &a, &b, Tol::Nmse(1.0)).is_err());
    }
    #[test]
    fn zero_elements_fail() {
        assert!(compare(DType::F32, &[], &[], Tol::Exact).is_err());
    }
    #[test]
    fn nmse_bound_bites() {
        let a = DType::F32.encode_f32(&[1.0, 2.0]);
        let b = DType::F32.encode_f32(&[1.0, 2.001]);
        assert!(compare(DType::F32, &a, &b, Tol::Nmse(1e-11)).is_err());
        assert!(compare(DType::F32, &a, &b, Tol::Nmse(1e-6)).is_ok());
    }
}
