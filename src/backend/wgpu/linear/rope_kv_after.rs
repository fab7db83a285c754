//! linear_rms_norm_rope_kv: a stacked q/k/v projection, then its tail (q/k norm, RoPE, k and v into
//! the KV pools). Where the projection is a split-K tensor-core linear (`BatchInvariance::ManyRows`,
//! the serving engine's projections at every batch), its partials are added inside the tail's
//! kernel (rms_norm_rope_kv.wgsl after shaders/linear_rms_norm_rope_kv.wgsl, whose `ld_x` sums them
//! in split order, as linear_splitk.wgsl does), so the op is two dispatches where linear and
//! rms_norm_rope_kv are three, with the same bits. Elsewhere the device refuses it by name and the
//! model records the two ops.
use super::{coop_dtypes, coop_pass, split, split_sum};
use crate::backend::wgpu::rms_norm_rope;
use crate::backend::wgpu::shaders::fill;
use crate::backend::wgpu::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// The op's two parts: the projection into f32 rows [T, N], and rms_norm_rope_kv of those rows.
fn parts(desc: &OpDesc) -> (OpDesc, OpDesc) {
    let Op::LinearRmsNormRopeKv { eps, rotary_dim } = desc.op else {
        unreachable!("rope_kv_after got {}", desc.op.name())
    };
    let (i, o) = (&desc.inputs, &desc.outputs);
    let (t, n, dh) = (i[0].shape[0], i[1].shape[0], o[1].shape[3]);
    let y = TensorDesc::new(DType::F32, &[t, n]);
    let lin = OpDesc::new(Op::Linear, i[..2].to_vec(), vec![y]);
    let mut ins = vec![TensorDesc::new(DType::F32, &[t, o[0].shape[1] + 2 * o[1].shape[2], dh])];
    ins.extend(i[2..].iter().cloned());
    (lin, OpDesc::new(Op::RmsNormRopeKv { eps, rotary_dim }, ins, o.clone()))
}

pub fn supports_rope_kv_after(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (lin, kv) = parts(desc);
    for (part, s) in [(&lin, super::supports(b, &lin)), (&kv, rms_norm_rope::supports(b, &kv))] {
        if let Support::No(r) = s {
            return Support::No(format!("{}: {r}", part.op.name()));
        }
    }
    let i = &desc.inputs;
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    if split(b, (m, k, n), coop_dtypes(i[0].dtype, i[1].dtype, DType::F32)).is_none() {
        return Support::No(format!(
            "a {m} x {k} x {n} projection here sums in its own kernel (no split-K partials for \
             the tail to add): run linear and rms_norm_rope_kv apart"
        ));
    }
    Support::Yes
}

/// Records the op: i = (x, w, nw, pos, cos, sin, slots), o = (q, k_pool, v_pool);
/// `supports_rope_kv_after` said yes.
pub fn record_rope_kv_after(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::LinearRmsNormRopeKv { eps, rotary_dim } = *op else {
        unreachable!("rope_kv_after::record got {}", op.name())
    };
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    let dtypes = coop_dtypes(i[0].dtype, i[1].dtype, DType::F32);
    let (c, splits) = split(b, (m, k, n), dtypes).expect("supports_rope_kv_after said yes");
    let part = b.scratch("linear-splitk", DType::F32, splits * m * n)?;
    coop_pass(b, c, &i[..2], &part, false)?;
    // rms_norm_rope_kv.wgsl with x the projection's output: its partials summed in split order
    // (linear_rms_norm_rope_kv.wgsl)
    let prefix = || fill(b.source("linear_rms_norm_rope_kv.wgsl"), &[("sum", split_sum(splits))]);
    let kv = Op::RmsNormRopeKv { eps, rotary_dim };
    let ins = [&part, i[2], i[3], i[4], i[5], i[6]];
    rms_norm_rope::dispatch_kv(b, &kv, &ins, o, Some((splits, &prefix)))
}

/// The tail's kernel on any adapter (lavapipe has no cooperative matrices, so the op itself is
/// refused there): partials made here, summed in the kernel (`ld_x` of
/// shaders/linear_rms_norm_rope_kv.wgsl), give the bits rms_norm_rope_kv gives their sum made on
/// the host in split order; and both match the CPU reference.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::backend::Backend;
    use crate::parity::compare::{compare, tolerance};
    use crate::util::Rng;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn split_tail_is_the_tail_of_the_sum() {
        let Some(b) = WgpuBackend::all().into_iter().next() else {
            eprintln!("no wgpu adapter: skipped");
            return;
        };
        let (t, hq, hkv, dh, nb, bs) = (3, 4, 2, 64, 2, 4);
        let n = (hq + 2 * hkv) * dh;
        let mut r = Rng::new(11);
        let (cos, sin) = crate::op::rope_tables(1e6, dh, 64);
        let w: Vec<f32> = (0..dh).map(|_| (1.0 + 0.3 * r.normal()) as f32).collect();
        let pool: Vec<f32> = (0..nb * bs * hkv * dh).map(|_| r.normal() as f32).collect();
        let ints = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let op = Op::RmsNormRopeKv {
            eps: 1e-6,
            rotary_dim: dh,
        };
        for splits in [2, 3, 4] {
            let part: Vec<f32> = (0..splits * t * n).map(|_| r.normal() as f32).collect();
            // the sum in split order, as linear_splitk.wgsl adds the partials
            let x: Vec<f32> = (0..t * n)
                .map(|i| (1..splits).fold(part[i], |a, s| a + part[s * t * n + i]))
                .collect();
            let run = |dev: &dyn Backend, split: Option<&WgpuBackend>| -> Vec<Vec<u8>> {
                let put = |d: DType, shape: &[usize], bytes: &[u8]| {
                    let x = dev.alloc(d, shape).unwrap();
                    dev.upload(&x, bytes).unwrap();
                    x
                };
                let ins = [
                    if split.is_some() {
                        // at an offset: the kernel reads the partials through their binding's offset
                        let whole = put(
                            DType::F32,
                            &[5 + splits * t * n],
                            &f32_bytes(&[vec![0.0; 5], part.clone()].concat()),
                        );
                        whole.view(5, &[splits * t * n]).unwrap()
                    } else {
                        put(DType::F32, &[t, n / dh, dh], &f32_bytes(&x))
                    },
                    put(DType::F32, &[dh], &f32_bytes(&w)),
                    put(DType::U32, &[t], &ints(&[3, 9, 40])),
                    put(DType::F32, &[64, dh / 2], &f32_bytes(&cos)),
                    put(DType::F32, &[64, dh / 2], &f32_bytes(&sin)),
                    put(DType::U32, &[t], &ints(&[5, 0, 2])),
                ];
                let outs = [
                    dev.alloc(DType::F32, &[t, hq, dh]).unwrap(),
                    put(DType::F16, &[nb, bs, hkv, dh], &DType::F16.encode_f32(&pool)),
                    put(DType::F16, &[nb, bs, hkv, dh], &DType::F16.encode_f32(&pool)),
                ];
                let (i, o): (Vec<&Tensor>, Vec<&Tensor>) = (ins.iter().collect(), outs.iter().collect());
                if let Some(wb) = split {
                    let prefix = || fill(wb.source("linear_rms_norm_rope_kv.wgsl"), &[("sum", split_sum(splits))]);
                    rms_norm_rope::dispatch_kv(wb, &op, &i, &o, Some((splits, &prefix))).unwrap();
                } else {
                    dev.run(&op, &i, &o).unwrap();
                }
                dev.flush().unwrap();
                o.iter().map(|t| dev.download(t).unwrap()).collect()
            };
            let (fused, plain, cpu) = (run(&b, Some(&b)), run(&b, None), run(&CpuBackend::new(), None));
            for (k, name) in ["q", "k_pool", "v_pool"].iter().enumerate() {
                assert!(
                    fused[k] == plain[k],
                    "{splits} splits: {name} is not the bits of the sum's tail"
                );
                let d = if k == 0 { DType::F32 } else { DType::F16 };
                let c = compare(d, &fused[k], &cpu[k], tolerance("rms_norm_rope_kv", d));
                assert!(c.is_ok(), "{splits} splits: {name} against the CPU: {}", c.unwrap_err());
            }
        }
    }
}
