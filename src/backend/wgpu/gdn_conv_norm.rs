//! gdn_conv_norm: causal_conv1d_batch, gdn_batch and the gated RMSNorm per value head as one op.
//! A decode batch (one token a sequence) under invariance off runs gdn_batch's tiles with the norm
//! after them in one dispatch (shaders/gdn_conv_norm.wgsl after gdn_recurrent_tile.wgsl and
//! gdn_batch.wgsl: the last of a head's tiles to finish scales the head's row by its 1/rms), and
//! up to `Tuning::gdn_conv_inside_max` sequences the conv inside it too (gdn_tile_conv.wgsl: the
//! tiles read q/k/v through the conv, the last of a key head's to finish writes its q/k conv
//! state), past them the conv's own dispatch first (gdn_tile_in.wgsl: q/k/v as they are). Every
//! other batch runs the composition, the conv and gdn_batch into scratch (f32) then
//! rms_norm_gated, so under invariance on a row's bits never depend on which batch it came in,
//! and a prefill chunk keeps gdn_batch's own forms (the chunked one for a lone sequence).
use super::gdn::{self, BatchParams, NT, TJ_REC};
use super::kernel::{atomic, read, write, KernelKey};
use super::{causal_conv1d, rms_norm_gated, Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{gdn_conv_norm_wiring, Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// Storage bindings of the fused kernel.
const BINDINGS: u32 = 13;

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let u = TensorDesc::new(DType::F32, &desc.inputs[0].shape);
    let core = TensorDesc::new(DType::F32, &desc.outputs[0].shape);
    let [(conv, ci, co), (gdn, gi, go), _] = gdn_conv_norm_wiring(&desc.op, &desc.inputs, &desc.outputs, u, core);
    for part in [OpDesc::new(conv, ci, co), OpDesc::new(gdn, gi, go)] {
        let s = match part.op {
            Op::CausalConv1dBatch => causal_conv1d::supports(b, &part),
            _ => gdn::supports(b, &part),
        };
        if let Support::No(r) = s {
            return Support::No(r);
        }
    }
    // one pass of the workgroup covers a key head's q/k channels (its invocations hold their
    // conv state: gdn_tile_conv.wgsl)
    let dk = desc.outputs[1].shape[2];
    if dk > NT {
        return Support::No(format!("key head dim {dk} over the fused kernel's workgroup of {NT}"));
    }
    // gdn_batch's workgroup memory plus a tile's squares
    let need = gdn::rec_smem(dk) + 4 * TJ_REC;
    if need > b.caps.max_workgroup_storage as usize {
        return Support::No(format!(
            "key head dim {dk} needs {need} B workgroup memory, device has {}",
            b.caps.max_workgroup_storage
        ));
    }
    if b.caps.max_storage_buffers < BINDINGS {
        return Support::No(format!(
            "the fused kernel binds {BINDINGS} storage buffers, device allows {}",
            b.caps.max_storage_buffers
        ));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::GdnConvNorm { eps } = *op else { unreachable!() };
    let gi = [i[0], i[2], i[3], i[4], i[5]];
    let (mut p, mut bindings) = gdn::params(op, &gi, &o[1].shape[1..])?;
    let (t, c, nk, nv, dk, dv) = (
        p.t as usize,
        p.c as usize,
        p.nk as usize,
        p.nv as usize,
        p.dk as usize,
        p.dv as usize,
    );
    let (s, k) = (i[6].shape[0], i[1].shape[1]);
    if t == 0 {
        return Ok(());
    }
    let u_scratch = || -> Result<Tensor> { b.scratch("gdn_conv_norm_u", DType::F32, t * c)?.reshape(&[t, c]) };
    if b.invariance() != BatchInvariance::Off || t != s {
        let (u, core) = (
            u_scratch()?,
            b.scratch("gdn_conv_norm_o", DType::F32, t * nv * dv)?
                .reshape(&[t, nv, dv])?,
        );
        let [(conv, ci, co), (gdn, gi, go), _] = gdn_conv_norm_wiring(op, i, o, &u, &core);
        causal_conv1d::record(b, &conv, &ci, &co)?;
        gdn::record(b, &gdn, &gi, &go)?;
        return rms_norm_gated::dispatch(b, eps, [&core, i[7], i[8], o[0]]);
    }
    // past the sequences the tiles convolve for themselves, the conv first into u, then the
    // fused kernel reading u as it is
    let apart = s > b.tuning.gdn_conv_inside_max;
    let u = if apart {
        let u = u_scratch()?;
        causal_conv1d::record(b, &Op::CausalConv1dBatch, &[i[0], i[1], i[6]], &[&u, o[2]])?;
        Some(u)
    } else {
        None
    };
    let ntiles = dv.div_ceil(TJ_REC);
    p.n = ntiles as u32;
    let bp = BatchParams::new(&p, s, o[1].shape[0], eps);
    // the counters have their own scratch: zero when made, and left zero by every dispatch
    let cnt = b.scratch("gdn_conv_norm_counters", DType::U32, t * (nv + nk))?;
    let rec = b.scratch("gdn_conv_norm_records", DType::U32, t * nv * (dv + ntiles))?;
    let x = u.as_ref().unwrap_or(i[0]);
    bindings[0] = read("qkv", x.dtype);
    bindings.extend([read("seqs", DType::U32), read("z", i[7].dtype), read("w", i[8].dtype)]);
    let mut tensors = vec![x, i[2], i[3], i[4], i[5], i[6], i[7], i[8]];
    if !apart {
        bindings.push(read("cw", i[1].dtype));
        tensors.push(i[1]);
    }
    bindings.extend([write("o", o[0].dtype), write("state", DType::F32)]);
    tensors.extend([o[0], o[1]]);
    if !apart {
        bindings.push(write("cpool", DType::F32));
        tensors.push(o[2]);
    }
    bindings.extend([atomic("cnt"), atomic("rec")]);
    tensors.extend([&cnt, &rec]);
    let key = KernelKey {
        entry: "gdn_conv_norm",
        bindings,
        variant: match apart {
            true => format!("dk{dk}"),
            false => format!("dk{dk}k{k}"),
        },
    };
    let mut consts = gdn::rec_consts(dk);
    consts.push(("GMAX", format!("{}u", dv.div_ceil(NT))));
    consts.push(("KM1", format!("{}u", k - 1)));
    let inputs = match apart {
        true => "gdn_tile_in.wgsl",
        false => "gdn_tile_conv.wgsl",
    };
    let src = [
        "gdn_recurrent_tile.wgsl",
        "gdn_batch.wgsl",
        inputs,
        "gdn_conv_norm.wgsl",
    ]
    .map(|f| b.source(f))
    .join("\n");
    gdn::launch(
        b,
        &key,
        &src,
        &consts,
        bytemuck::bytes_of(&bp),
        &tensors,
        s * nv * ntiles,
    )
}
