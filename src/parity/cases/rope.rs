use super::{seed, DType, FLOATS};
use crate::op::{rope_tables, Op, TensorDesc};
use crate::parity::case::{input, Case, Init};

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // (T, H, Dh, rotary_dim, theta, positions)
    let shapes: [(usize, usize, usize, usize, f64, Vec<u32>); 6] = [
        (5, 4, 64, 64, 10_000.0, vec![0, 1, 2, 3, 4]),
        (7, 3, 128, 32, 10_000.0, vec![9, 10, 11, 12, 13, 14, 15]),
        (1, 2, 256, 64, 10_000_000.0, vec![300]),
        (13, 16, 128, 128, 1_000_000.0, (100..113).collect()),
        (3, 8, 128, 128, 1_000_000.0, vec![511, 0, 77]),
        (2, 5, 6, 4, 500.0, vec![1, 2]),
    ];
    for dt in FLOATS {
        for (t, h, dh, rot, theta, pos) in shapes.iter().cloned() {
            let max_pos = 512;
            let (cos, sin) = rope_tables(theta, rot, max_pos);
            let tag = format!("{dt},rot{rot},theta{theta:e}");
            v.push(Case::new(
                "rope",
                &tag,
                Op::Rope { rotary_dim: rot },
                vec![
                    input(
                        dt,
                        &[t, h, dh],
                        Init::Normal {
                            seed: seed(&format!("rope{tag}{t}{h}{dh}")),
                            std: 1.0,
                        },
                    ),
                    input(DType::U32, &[t], Init::U32s(pos)),
                    input(DType::F32, &[max_pos, rot / 2], Init::Values(cos)),
                    input(DType::F32, &[max_pos, rot / 2], Init::Values(sin)),
                ],
                vec![TensorDesc::new(dt, &[t, h, dh])],
            ));
        }
    }
    v
}
