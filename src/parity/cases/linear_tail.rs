//! The decode projections' other tails: linear_add (the residual added in the projection's
//! epilogue) and rms_norm_linear (an RMSNorm read inside the projection, no add), the pair a lone
//! decode step takes where it would take linear, then add_rms_norm_linear.
use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

/// A weight [n, k] of dtype `w` from seed `s`: valid random blocks, or normal rows scaled by K.
fn weight(w: DType, (n, k): (usize, usize), s: u64) -> crate::parity::case::Input {
    let init = match w.is_quant() {
        true => Init::QuantBlocks { seed: s ^ 7 },
        false => Init::Normal {
            seed: s ^ 7,
            std: 1.0 / (k as f32).sqrt(),
        },
    };
    input(w, &[n, k], init)
}

/// linear_add: Qwen3-0.6B's o and down projections at one row, steps of 3 and 4 rows (x rows a
/// workgroup), N edges inside a workgroup's rows and an N below one, in every float dtype; every
/// block-quantized type at K = 1024 and 256 with N edges; and a q4_k matrix the plain linear may
/// give qmatvec_xs (2048 x 2048), which the wgpu device refuses by name.
pub fn linear_add_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let floats = [
        (1, 2048, 1024),
        (1, 3072, 1024),
        (3, 130, 33),
        (4, 64, 67),
        (1, 2048, 5),
    ];
    for (m, k, n) in floats {
        for w in FLOATS {
            v.push(linear_add_case(w, (m, k, n)));
        }
    }
    for q in DType::QUANTS {
        for (m, k, n) in [(1, 1024, 96), (3, 256, 67)] {
            v.push(linear_add_case(q, (m, k, n)));
        }
    }
    v.push(linear_add_case(DType::Q4K, (1, 2048, 2048)));
    v
}

fn linear_add_case(w: DType, (m, k, n): (usize, usize, usize)) -> Case {
    let tag = format!("w{w},N{n}");
    let s = seed(&format!("linadd{tag}{m}{k}"));
    Case::new(
        "linear_add",
        &tag,
        Op::LinearAdd,
        vec![
            input(DType::F32, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            weight(w, (n, k), s),
            input(DType::F32, &[m, n], Init::Normal { seed: s + 1, std: 0.5 }),
        ],
        vec![TensorDesc::new(DType::F32, &[m, n])],
    )
}

/// rms_norm_linear: Qwen3-0.6B's q/k/v and gate/up shapes at one row, steps of 3 and 4 rows with
/// N edges, the swiglu epilogue with even N, in every float dtype, the norm weight f32 or bf16
/// (plain and 1 + w); every block-quantized type at K = 1024 plain and with the swiglu epilogue and
/// at 4 rows, an f32 norm weight (the vec4 lanes read x and nw 16 bytes at a time) and for q4_k a
/// bf16 1 + w (element by element); and the 2048 x 2048 q4_k matrix the device refuses by name.
pub fn rms_norm_linear_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let floats = [
        ((1, 1024, 4096), false),
        ((3, 130, 33), false),
        ((1, 1024, 6144), true),
        ((4, 64, 70), true),
    ];
    for ((m, k, n), swiglu) in floats {
        for w in FLOATS {
            for (nw, unit) in [(DType::F32, false), (DType::BF16, true)] {
                v.push(norm_linear_case(w, (m, k, n), swiglu, nw, unit));
            }
        }
    }
    for q in DType::QUANTS {
        for ((m, k, n), swiglu) in [((1, 1024, 96), false), ((4, 512, 33), false), ((1, 1024, 128), true)] {
            v.push(norm_linear_case(q, (m, k, n), swiglu, DType::F32, false));
        }
    }
    v.push(norm_linear_case(DType::Q4K, (1, 1024, 96), false, DType::BF16, true));
    v.push(norm_linear_case(DType::Q4K, (1, 2048, 2048), false, DType::F32, false));
    v
}

fn norm_linear_case(w: DType, (m, k, n): (usize, usize, usize), swiglu: bool, nw: DType, unit: bool) -> Case {
    let tag = format!(
        "w{w}-nw{nw}{},N{n}{}",
        if unit { "+1" } else { "" },
        if swiglu { ",swiglu" } else { "" }
    );
    let s = seed(&format!("nlin{tag}{m}{k}"));
    Case::new(
        "rms_norm_linear",
        &tag,
        Op::RmsNormLinear {
            eps: 1e-6,
            unit_offset: unit,
            swiglu,
        },
        vec![
            input(DType::F32, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            input(nw, &[k], Init::Normal { seed: s + 2, std: 0.3 }),
            weight(w, (n, k), s),
        ],
        vec![TensorDesc::new(DType::F32, &[m, if swiglu { n / 2 } else { n }])],
    )
}
