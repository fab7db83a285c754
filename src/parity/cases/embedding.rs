use super::{seed, DType, FLOATS};
use crate::op::{Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for dt in FLOATS {
        for out in [dt, DType::F32] {
            if dt == DType::F32 && out == DType::F32 && v.iter().any(|c: &Case| c.id.starts_with("embedding[f32,")) {
                continue;
            }
            for (vocab, d, ids) in [
                (11usize, 7usize, vec![0u32, 10, 3, 3, 11]),
                (1000, 64, vec![999, 0, 512]),
                (13, 4097, vec![12, 1, 7, 5, 0, 2, 13]),
            ] {
                let tag = if out == dt {
                    dt.name().to_string()
                } else {
                    format!("{dt}->{out}")
                };
                let t = ids.len();
                // the last id of the first and third shapes is past the table: it must give zeros
                v.push(Case::new(
                    "embedding",
                    &format!("{tag},T{t}"),
                    Op::Embedding,
                    vec![
                        input(
                            dt,
                            &[vocab, d],
                            Init::Normal {
                                seed: seed(&format!("emb{dt}{vocab}")),
                                std: 1.0,
                            },
                        ),
                        input(DType::U32, &[t], Init::U32s(ids)),
                    ],
                    vec![TensorDesc::new(out, &[t, d])],
                ));
            }
        }
    }
    // shards of a table: ids below, inside and past the shard; rows outside keep their contents
    for dt in FLOATS {
        let outs = if dt == DType::F32 {
            vec![dt]
        } else {
            vec![dt, DType::F32]
        };
        for out in outs {
            for (first, vs, d, ids) in [
                (0usize, 5usize, 7usize, vec![0u32, 4, 5, 9, 2]),
                (1000, 24, 64, vec![999, 1000, 1023, 1024, 1010, 0]),
                (7, 6, 4097, vec![12, 6, 7, 13, 9]),
            ] {
                let tag = if out == dt {
                    dt.name().to_string()
                } else {
                    format!("{dt}->{out}")
                };
                let t = ids.len();
                v.push(
                    Case::new(
                        "embedding_shard",
                        &format!("{tag},first{first},T{t}"),
                        Op::EmbeddingShard { first },
                        vec![
                            input(
                                dt,
                                &[vs, d],
                                Init::Normal {
                                    seed: seed(&format!("embs{dt}{vs}{d}")),
                                    std: 1.0,
                                },
                            ),
                            input(DType::U32, &[t], Init::U32s(ids)),
                        ],
                        vec![TensorDesc::new(out, &[t, d])],
                    )
                    .with_out_init(
                        0,
                        Init::Normal {
                            seed: seed(&format!("embso{dt}{d}")),
                            std: 1.0,
                        },
                    ),
                );
            }
        }
    }
    v
}

/// embedding / embedding_shard with a block-quantized table (valid random blocks, dequantized
/// exactly by the CPU reference), into f32, bf16 and f16 rows.
pub fn quant_cases() -> Vec<Case> {
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
