//! The contracts of the fused ops that are checked as their compositions: each is the checks of
//! the ops it stands for, with the operands between them as the composition has them (the normed
//! rows, the projection's f32 output, q in f32), plus the shapes that tie the parts together.
use super::{Op, OpDesc, TensorDesc};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::shape_str;

pub(super) fn check_shapes(op: &Op, i: &[TensorDesc], o: &[TensorDesc]) -> Result<()> {
    let bad = |detail: String| Err(Error::shape(op.name(), detail));
    match op {
        Op::AddRmsNormLinear {
            eps,
            unit_offset,
            swiglu,
        } => {
            // the composition's two checks, the normed rows an f32 [M, K]
            if i[0].shape.len() != 2 {
                return bad(format!("a must be [M, K], got [{}]", shape_str(&i[0].shape)));
            }
            let h = TensorDesc::new(DType::F32, &i[0].shape);
            let (eps, unit_offset) = (*eps, *unit_offset);
            let norm = Op::AddRmsNorm { eps, unit_offset };
            OpDesc::new(norm, i[..3].to_vec(), vec![o[0].clone(), h.clone()]).check()?;
            let lin = if *swiglu { Op::LinearSwiGlu } else { Op::Linear };
            OpDesc::new(lin, vec![h, i[3].clone()], vec![o[1].clone()]).check()?;
        }
        Op::LinearAddRmsNorm { eps, unit_offset } => {
            // the composition's two checks
            OpDesc::new(Op::Linear, i[..2].to_vec(), vec![o[0].clone()]).check()?;
            let norm = Op::AddRmsNorm {
                eps: *eps,
                unit_offset: *unit_offset,
            };
            OpDesc::new(norm, vec![i[2].clone(), o[0].clone(), i[3].clone()], o[1..].to_vec()).check()?;
        }
        Op::LinearAdd => {
            // the composition's two checks, the projection's rows an f32 [M, N]
            let y = TensorDesc::new(
                DType::F32,
                &[
                    i[0].shape.first().copied().unwrap_or(0),
                    i[1].shape.first().copied().unwrap_or(0),
                ],
            );
            OpDesc::new(Op::Linear, i[..2].to_vec(), vec![y.clone()]).check()?;
            OpDesc::new(Op::Add, vec![i[2].clone(), y], o.to_vec()).check()?;
        }
        Op::RmsNormLinear {
            eps,
            unit_offset,
            swiglu,
        } => {
            // the composition's two checks, the normed rows an f32 [M, K]
            if i[0].shape.len() != 2 {
                return bad(format!("x must be [M, K], got [{}]", shape_str(&i[0].shape)));
            }
            let h = TensorDesc::new(DType::F32, &i[0].shape);
            let norm = Op::RmsNorm {
                eps: *eps,
                unit_offset: *unit_offset,
            };
            OpDesc::new(norm, i[..2].to_vec(), vec![h.clone()]).check()?;
            let lin = if *swiglu { Op::LinearSwiGlu } else { Op::Linear };
            OpDesc::new(lin, vec![h, i[2].clone()], o.to_vec()).check()?;
        }
        Op::RmsNormRopeKv { eps, rotary_dim } => {
            // the composition: RmsNormRope over the q and k heads, KvWrite of k and v
            let (kp, hq) = (&o[1], o[0].shape.get(1).copied().unwrap_or(0));
            let hkv = kp.shape.get(2).copied().unwrap_or(0);
            let (t, dh) = (
                o[0].shape.first().copied().unwrap_or(0),
                kp.shape.get(3).copied().unwrap_or(0),
            );
            if i[0].shape != [t, hq + 2 * hkv, dh] || o[0].shape != [t, hq, dh] {
                return bad(format!(
                        "x must be [T, Hq + 2 Hkv, Dh] and q [T, Hq, Dh] with the pools' Hkv {hkv} and Dh {dh}, got x [{}], q [{}]",
                        shape_str(&i[0].shape),
                        shape_str(&o[0].shape)
                    ));
            }
            let heads = |h: usize| TensorDesc::new(i[0].dtype, &[t, h, dh]);
            let nr = Op::RmsNormRope {
                eps: *eps,
                rotary_dim: *rotary_dim,
            };
            let mut ins = i[..5].to_vec();
            ins[0] = heads(hq + hkv);
            OpDesc::new(nr, ins, vec![TensorDesc::new(o[0].dtype, &[t, hq + hkv, dh])]).check()?;
            let kv = vec![heads(hkv), heads(hkv), i[5].clone()];
            OpDesc::new(Op::KvWrite, kv, o[1..].to_vec()).check()?;
        }
        Op::LinearRmsNormRopeKv { eps, rotary_dim } => {
            // the composition: linear into f32 rows, then rms_norm_rope_kv of them as heads
            let y = TensorDesc::new(
                DType::F32,
                &[
                    i[0].shape.first().copied().unwrap_or(0),
                    i[1].shape.first().copied().unwrap_or(0),
                ],
            );
            OpDesc::new(Op::Linear, i[..2].to_vec(), vec![y.clone()]).check()?;
            let (hq, hkv, dh) = (
                o[0].shape.get(1).copied().unwrap_or(0),
                o[1].shape.get(2).copied().unwrap_or(0),
                o[1].shape.get(3).copied().unwrap_or(0),
            );
            if y.shape[1] != (hq + 2 * hkv) * dh {
                return bad(format!(
                    "w must have (Hq + 2 Hkv) Dh = {} rows (q [T, Hq, Dh], the pools' Hkv and Dh), got [{}]",
                    (hq + 2 * hkv) * dh,
                    shape_str(&i[1].shape)
                ));
            }
            let heads = TensorDesc::new(DType::F32, &[y.shape[0], hq + 2 * hkv, dh]);
            let kv = Op::RmsNormRopeKv {
                eps: *eps,
                rotary_dim: *rotary_dim,
            };
            let mut ins = vec![heads];
            ins.extend(i[2..].iter().cloned());
            OpDesc::new(kv, ins, o.to_vec()).check()?;
        }
        Op::RmsNormRopeKvAttention { .. } => {
            // the composition's two ops, q [T, Hq, Dh] f32 between them
            let (kv, att) = op.rope_kv_attention_parts().expect("the fused op");
            let q = TensorDesc::new(DType::F32, &o[0].shape);
            OpDesc::new(kv, i[..6].to_vec(), vec![q.clone(), o[1].clone(), o[2].clone()]).check()?;
            let ins = vec![q, o[1].clone(), o[2].clone(), i[6].clone(), i[7].clone()];
            OpDesc::new(att, ins, vec![o[0].clone()]).check()?;
        }
        Op::GdnConvNorm { .. } => {
            // the composition's ops, u and o (f32) between them
            let u = TensorDesc::new(DType::F32, &i[0].shape);
            let core = TensorDesc::new(DType::F32, &o[0].shape);
            for (op, ins, outs) in super::gdn_conv_norm_wiring(op, i, o, u, core) {
                OpDesc::new(op, ins, outs).check()?;
            }
        }
        _ => unreachable!("fused::check_shapes got {}", op.name()),
    }
    Ok(())
}
