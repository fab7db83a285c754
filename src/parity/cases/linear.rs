use super::{seed, DType, FLOATS};
use crate::backend::BatchInvariance;
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

/// (M, K, N): decode matvecs (M = 1) and prefill GEMMs, odd sizes included.
const SHAPES: [(usize, usize, usize); 15] = [
    (1, 7, 5),
    (1, 64, 32),
    (1, 4097, 13),
    (1, 1024, 3072),
    (2, 128, 11),
    (5, 64, 11),
    (7, 4097, 13),
    (33, 256, 130),
    (128, 1024, 256),
    (2, 128, 256),
    // GEMM path (M > 64) with odd K and N: the K tail and the N edge
    (130, 4097, 67),
    // decode matvecs with an LM head's many rows and with a gate/up projection's (the native plan
    // gives them one wave a column), odd N; K long enough that a lane loads more than one trip of
    // chunks, and one that ends inside a trip small enough for the emulator's quick run
    (3, 48, 16411),
    (2, 2056, 4101),
    (1, 2056, 200),
    // enough tiles for the wide GEMM shape (linear/mod.rs `WIDE_FROM`: 153 of 128 x 128 on 16 x 16
    // tiles, 594 on lavapipe's 8 x 8), M and N edges inside a tile, K ending inside a step
    (1100, 168, 2100),
];

fn one(x: DType, w: DType, y: DType, (m, k, n): (usize, usize, usize)) -> Case {
    let tag = if x == w && w == y {
        x.name().to_string()
    } else {
        format!("x{x}-w{w}-y{y}")
    };
    let s = seed(&format!("lin{tag}{m}{k}{n}"));
    Case::new(
        "linear",
        &format!("{tag},N{n}"),
        Op::Linear,
        vec![
            input(x, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            input(
                w,
                &[n, k],
                Init::Normal {
                    seed: s ^ 7,
                    std: 1.0 / (k as f32).sqrt(),
                },
            ),
        ],
        vec![TensorDesc::new(y, &[m, n])],
    )
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for shape in SHAPES {
        for dt in FLOATS {
            v.push(one(dt, dt, dt, shape));
            if dt != DType::F32 {
                // the model's layout: f32 activations, 16-bit weights
                v.push(one(DType::F32, dt, DType::F32, shape));
            }
        }
    }
    v
}

/// The serving engine's family of kernels (`BatchInvariance::ManyRows`: on tensor cores, K split
/// across workgroups and a second pass adding the partials): Qwen3-0.6B's per-layer shapes at 1,
/// 17 and 64 rows, and K ending inside a split with an N edge inside a tile. Without tensor cores
/// the same cases take the matvec.
pub fn many_rows_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for shape in [(1, 1024, 4096), (17, 2048, 1024), (64, 3072, 1024), (70, 1000, 300)] {
        for w in [DType::F16, DType::BF16] {
            v.push(one(DType::F32, w, DType::F32, shape).with_invariance(BatchInvariance::ManyRows));
        }
    }
    for (m, k, n) in [(5, 1024, 6144), (64, 1000, 68)] {
        for w in [DType::F16, DType::BF16] {
            v.push(swiglu_one(w, (m, k, n)).with_invariance(BatchInvariance::ManyRows));
        }
    }
    v
}

/// (M, K, N) for every type: K a multiple of 256. Rows of 34-, 18- and 210-byte blocks start at
/// 2 mod 4 when K / block is odd (K = 256, 768 for q6_k; odd block counts below for the others).
const QUANT_SHAPES: [(usize, usize, usize); 8] = [
    (1, 256, 67),
    (1, 1024, 130),
    (1, 3072, 13),
    (2, 256, 13),
    (5, 768, 67),
    (8, 512, 33),
    // GEMM path
    (65, 256, 67),
    (130, 768, 130),
];

/// Extra shapes for the 32-element-block types: an odd number of blocks a row.
const QUANT_SHAPES_32: [(usize, usize, usize); 3] = [(1, 96, 13), (3, 160, 67), (70, 96, 11)];

fn quant(x: DType, w: DType, y: DType, (m, k, n): (usize, usize, usize)) -> Case {
    let tag = format!("x{x}-w{w}-y{y}");
    let s = seed(&format!("qlin{tag}{m}{k}{n}"));
    Case::new(
        "linear",
        &format!("{tag},N{n}"),
        Op::Linear,
        vec![
            input(x, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            input(w, &[n, k], Init::QuantBlocks { seed: s ^ 7 }),
        ],
        vec![TensorDesc::new(y, &[m, n])],
    )
}

/// Linear with a block-quantized w: every quant type x x in f32 / bf16, y f32, plus an f16 y;
/// decode matvecs M = 1..8 and GEMMs M = 65, 130; q4_k also at 2^22 elements. w holds valid
/// random blocks (`quant::random_blocks`); the CPU reference dequantizes them exactly and
/// accumulates in f64. Ids name the type: `linear[xf32-wq4_k-yf32,N67,1x256]`.
pub fn quant_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for q in DType::QUANTS {
        let extra: &[(usize, usize, usize)] = if q.block().0 == 32 { &QUANT_SHAPES_32 } else { &[] };
        for &shape in QUANT_SHAPES.iter().chain(extra) {
            for x in [DType::F32, DType::BF16] {
                v.push(quant(x, q, DType::F32, shape));
            }
        }
        if q == DType::Q4K {
            // matrices of 2^22 elements with K >= 2048: the integer-dot lanes over x limbs made
            // by each workgroup (the wgpu quantized matvec's lanes), M = 1 and 3
            for shape in [(1, 4096, 1024), (3, 2048, 2048)] {
                v.push(quant(DType::F32, q, DType::F32, shape));
            }
        }
        v.push(quant(DType::F32, q, DType::F16, (1, 256, 67)));
        v.push(quant(DType::F16, q, DType::F16, (70, 256, 13)));
    }
    v
}

/// swiglu_linear (the down projection over its swiglu): x [M, 2K] (gate, up) pairs in f32, w in
/// every float dtype; decode and prefill M, odd K (the K tail), Qwen3-0.6B's down projection.
pub fn swiglu_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (m, k, n) in [(1, 3072, 1024), (1, 7, 5), (3, 257, 33), (33, 512, 130), (70, 96, 11)] {
        for w in FLOATS {
            let tag = format!("w{w}-yf32,N{n}");
            let s = seed(&format!("swlin{tag}{m}{k}"));
            v.push(Case::new(
                "swiglu_linear",
                &tag,
                Op::SwiGluLinear,
                vec![
                    input(DType::F32, &[m, 2 * k], Init::Normal { seed: s, std: 1.5 }),
                    input(
                        w,
                        &[n, k],
                        Init::Normal {
                            seed: s ^ 7,
                            std: 1.0 / (k as f32).sqrt(),
                        },
                    ),
                ],
                vec![TensorDesc::new(DType::F32, &[m, n])],
            ));
        }
    }
    v
}

/// linear_swiglu (the gate/up projection with its swiglu): f32 x, W of interleaved (gate, up)
/// rows, f32 y. With 16-bit W it exists where the linear takes tensor cores (M >= 64 without batch
/// invariance): odd K (the K tail), an N edge inside a tile, Qwen3-0.6B's gate/up projection, and
/// tiles enough for the wide GEMM shape (linear/mod.rs `WIDE_FROM`).
/// With a block-quantized W at every M: Qwen3-0.6B's gate/up projection in a decode step (the
/// qmatvec's epilogue, four rows a workgroup), M = 3 at two rows a workgroup, an N whose last
/// workgroup holds one pair of its four rows, a prefill (M = 70: refused by name where it takes
/// the tensor cores), and q4_k at 2^22 elements with
/// K = 2048 (lanes without the epilogue: the linear, then swiglu).
pub fn linear_swiglu_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for shape in [(64, 1024, 6144), (70, 97, 22), (130, 4097, 68), (1100, 168, 2100)] {
        for w in [DType::F16, DType::BF16] {
            v.push(swiglu_one(w, shape));
        }
    }
    for q in [DType::Q4K, DType::Q8_0, DType::Q4_0, DType::Q6K] {
        for shape in [(1, 1024, 6144), (3, 256, 70), (1, 256, 2054), (70, 256, 22)] {
            v.push(swiglu_one(q, shape));
        }
    }
    v.push(swiglu_one(DType::Q4K, (1, 2048, 2048)));
    v
}

fn swiglu_one(w: DType, (m, k, n): (usize, usize, usize)) -> Case {
    let tag = format!("w{w}-yf32,N{n}");
    let s = seed(&format!("linsw{tag}{m}{k}"));
    let init = match w.is_quant() {
        true => Init::QuantBlocks { seed: s ^ 7 },
        false => Init::Normal {
            seed: s ^ 7,
            std: 1.5 / (k as f32).sqrt(),
        },
    };
    Case::new(
        "linear_swiglu",
        &tag,
        Op::LinearSwiGlu,
        vec![
            input(DType::F32, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            input(w, &[n, k], init),
        ],
        vec![TensorDesc::new(DType::F32, &[m, n / 2])],
    )
}

/// add_rms_norm_linear (a residual add + RMSNorm read inside the next projection): f32 a, b and
/// sum, weights in every float dtype, the norm weight f32 or bf16, plain and 1 + w; a decode step
/// at Qwen3-0.6B's q/k/v and gate/up shapes, a step of 3 and 4 rows (x rows a workgroup), a K of
/// one pair a thread or less, N edges inside a workgroup's rows. With the swiglu epilogue: the
/// gate/up shape, and even N (pairs) with edges inside a workgroup's rows. Then every
/// block-quantized weight type (`quant_norm_cases`).
pub fn add_norm_cases() -> Vec<Case> {
    let mut v = quant_norm_cases();
    let plain = [
        (1, 1024, 4096),
        (1, 1024, 6144),
        (3, 130, 33),
        (4, 64, 67),
        (1, 2048, 5),
    ]
    .map(|s| (s, false));
    let pairs = [(1, 1024, 6144), (3, 130, 34), (4, 64, 70), (1, 2048, 6)].map(|s| (s, true));
    for ((m, k, n), swiglu) in plain.into_iter().chain(pairs) {
        for w in FLOATS {
            for (nw, unit) in [(DType::F32, false), (DType::BF16, true)] {
                let init = |s: u64| Init::Normal {
                    seed: s ^ 7,
                    std: 1.0 / (k as f32).sqrt(),
                };
                v.push(add_norm_case("anlin", w, init, (m, k, n), swiglu, nw, unit));
            }
        }
    }
    v
}

/// add_rms_norm_linear with a block-quantized w (valid random blocks, `Init::QuantBlocks`): every
/// quant type at K = 1024 (Qwen3-0.6B's hidden size: the wgpu matvec's vec4 lanes for q4_k and
/// q8_0, the word lanes for the rest), rows of 3 and 4 with N edges inside a workgroup's rows, a
/// 32-element type's odd number of blocks, the swiglu epilogue with even N; the norm weight f32
/// (plain) or bf16 (1 + w), and for q4_k and q8_0 also f32 1 + w (the vec4 lanes read a, b and an
/// f32 nw 16 bytes at a time, a bf16 nw element by element). And a q4_k matrix the plain linear gives the integer-dot lanes
/// (2048 x 2048), which the wgpu device refuses by name (add_rms_norm, then the linear).
fn quant_norm_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for q in DType::QUANTS {
        let mut shapes = vec![
            ((1, 1024, 96), false),
            ((3, 256, 67), false),
            ((4, 512, 33), false),
            ((1, 1024, 128), true),
            ((3, 256, 70), true),
        ];
        if q.block().0 == 32 {
            shapes.push(((2, 96, 13), false));
        }
        if q == DType::Q4K {
            shapes.push(((1, 2048, 2048), false));
        }
        let mut nws = vec![(DType::F32, false), (DType::BF16, true)];
        if matches!(q, DType::Q4K | DType::Q8_0) {
            nws.push((DType::F32, true));
        }
        for ((m, k, n), swiglu) in shapes {
            for &(nw, unit) in &nws {
                let init = |s: u64| Init::QuantBlocks { seed: s ^ 7 };
                v.push(add_norm_case("qanlin", q, init, (m, k, n), swiglu, nw, unit));
            }
        }
    }
    v
}

/// One add_rms_norm_linear case: a and b [m, k], the norm weight `nw` (1 + w where `unit`), the
/// weight [n, k] of dtype `w` drawn by `init` from the case's seed (whose name starts `prefix`).
fn add_norm_case(
    prefix: &str,
    w: DType,
    init: impl Fn(u64) -> Init,
    (m, k, n): (usize, usize, usize),
    swiglu: bool,
    nw: DType,
    unit: bool,
) -> Case {
    let tag = format!(
        "w{w}-nw{nw}{},N{n}{}",
        if unit { "+1" } else { "" },
        if swiglu { ",swiglu" } else { "" }
    );
    let s = seed(&format!("{prefix}{tag}{m}{k}"));
    Case::new(
        "add_rms_norm_linear",
        &tag,
        Op::AddRmsNormLinear {
            eps: 1e-6,
            unit_offset: unit,
            swiglu,
        },
        vec![
            input(DType::F32, &[m, k], Init::Normal { seed: s, std: 1.0 }),
            input(DType::F32, &[m, k], Init::Normal { seed: s + 1, std: 0.5 }),
            input(nw, &[k], Init::Normal { seed: s + 2, std: 0.3 }),
            input(w, &[n, k], init(s)),
        ],
        vec![
            TensorDesc::new(DType::F32, &[m, k]),
            TensorDesc::new(DType::F32, &[m, if swiglu { n / 2 } else { n }]),
        ],
    )
}

/// linear_add_rms_norm (a projection, then the residual add + RMSNorm of its output), under
/// `BatchInvariance::ManyRows`, where the wgpu device has it (the split-K tensor-core linear, its
/// partials summed inside the norm): Qwen3-0.6B's o and down projections at 1, 8 and 64 rows, a
/// K that is no whole number of splits, N below a row workgroup, both 16-bit weight dtypes, the
/// norm weight f32 or bf16 (plain and 1 + w).
pub fn norm_after_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let shapes = [(1, 2048, 1024), (8, 2048, 1024), (64, 3072, 1024), (3, 1000, 96)];
    for (m, k, n) in shapes {
        for w in [DType::BF16, DType::F16] {
            for (nw, unit) in [(DType::F32, false), (DType::BF16, true)] {
                let tag = format!("w{w}-nw{nw}{},{m}x{k}x{n}", if unit { "+1" } else { "" });
                let s = seed(&format!("linan{tag}"));
                let case = Case::new(
                    "linear_add_rms_norm",
                    &tag,
                    Op::LinearAddRmsNorm {
                        eps: 1e-6,
                        unit_offset: unit,
                    },
                    vec![
                        input(DType::F32, &[m, k], Init::Normal { seed: s, std: 1.0 }),
                        input(
                            w,
                            &[n, k],
                            Init::Normal {
                                seed: s ^ 7,
                                std: 1.0 / (k as f32).sqrt(),
                            },
                        ),
                        input(DType::F32, &[m, n], Init::Normal { seed: s + 1, std: 0.5 }),
                        input(nw, &[n], Init::Normal { seed: s + 2, std: 0.3 }),
                    ],
                    vec![TensorDesc::new(DType::F32, &[m, n]); 3],
                );
                v.push(case.with_invariance(BatchInvariance::ManyRows));
            }
        }
    }
    v
}
