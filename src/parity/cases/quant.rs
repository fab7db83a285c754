//! Block-quantized weights: linear with a quantized w (every quant type x x in f32 / bf16, y f32,
//! plus an f16 y; decode matvecs M = 1..8 and GEMMs M = 65, 130; q4_k also at 2^22 elements) and embedding / embedding_shard
//! with a quantized table. w and tables are valid random blocks (`quant::random_blocks`); the CPU
//! reference dequantizes them exactly and accumulates in f64. Ids name the type: `linear[xf32-wq4_k-yf32,N67,1x256]`.
use super::{seed, DType};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

/// (M, K, N) for every type: K a multiple of 256. Rows of 34-, 18- and 210-byte blocks start at
/// 2 mod 4 when K / block is odd (K = 256, 768 for q6_k; odd block counts below for the others).
const SHAPES: [(usize, usize, usize); 8] = [
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
const SHAPES_32: [(usize, usize, usize); 3] = [(1, 96, 13), (3, 160, 67), (70, 96, 11)];

fn linear(x: DType, w: DType, y: DType, (m, k, n): (usize, usize, usize)) -> Case {
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

pub fn linear_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for q in DType::QUANTS {
        let extra: &[(usize, usize, usize)] = if q.block().0 == 32 { &SHAPES_32 } else { &[] };
        for &shape in SHAPES.iter().chain(extra) {
            for x in [DType::F32, DType::BF16] {
                v.push(linear(x, q, DType::F32, shape));
            }
        }
        if q == DType::Q4K {
            // matrices of 2^22 elements with K >= 2048: the integer-dot lanes over x limbs made
            // by each workgroup (quant.rs `lanes`), M = 1 and 3
            for shape in [(1, 4096, 1024), (3, 2048, 2048)] {
                v.push(linear(DType::F32, q, DType::F32, shape));
            }
        }
        v.push(linear(DType::F32, q, DType::F16, (1, 256, 67)));
        v.push(linear(DType::F16, q, DType::F16, (70, 256, 13)));
    }
    v
}

pub fn embedding_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for q in DType::QUANTS {
        let d = q.block().0 * if q.block().0 == 32 { 3 } else { 2 };
        for out in [DType::F32, DType::BF16, DType::F16] {
            // the last id is past the table: a row of zeros
            let ids = vec![0u32, 10, 3, 3, 7, 11];
            v.push(Case::new(
                "embedding",
                &format!("{q}->{out},T{}", ids.len()),
                Op::Embedding,
                vec![
                    input(
                        q,
                        &[11, d],
                        Init::QuantBlocks {
                            seed: seed(&format!("qemb{q}")),
                        },
                    ),
                    input(DType::U32, &[ids.len()], Init::U32s(ids)),
                ],
                vec![TensorDesc::new(out, &[6, d])],
            ));
        }
        // a shard: ids below, inside and past it; rows outside keep their contents
        let ids = vec![6u32, 7, 12, 13, 9, 0];
        v.push(
            Case::new(
                "embedding_shard",
                &format!("{q}->f32,first7,T{}", ids.len()),
                Op::EmbeddingShard { first: 7 },
                vec![
                    input(
                        q,
                        &[6, d],
                        Init::QuantBlocks {
                            seed: seed(&format!("qembs{q}")),
                        },
                    ),
                    input(DType::U32, &[ids.len()], Init::U32s(ids)),
                ],
                vec![TensorDesc::new(DType::F32, &[6, d])],
            )
            .with_out_init(
                0,
                Init::Normal {
                    seed: seed(&format!("qembso{q}")),
                    std: 1.0,
                },
            ),
        );
    }
    v
}
