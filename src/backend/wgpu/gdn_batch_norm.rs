//! gdn_batch_norm: gdn_batch with the gated RMSNorm per value head after it. A decode batch
//! (one token a sequence) under invariance off runs both in one dispatch
//! (shaders/gdn_batch_norm.wgsl after gdn_recurrent_tile.wgsl and gdn_batch.wgsl: gdn_batch's
//! tiles, the last of a head's tiles to finish scaling the head's row by its 1/rms). Every other
//! batch runs the
//! composition, gdn_batch into a scratch o (f32) then rms_norm_gated, so under invariance on a
//! row's bits never depend on which batch it came in, and a prefill chunk keeps gdn_batch's own
//! forms (the chunked one for a lone sequence).
use super::gdn::{self, BatchParams, NT, TJ_REC};
use super::kernel::{atomic, read, write, KernelKey};
use super::{rms_norm_gated, Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (gdn, _) = desc.op.gdn_batch_norm_parts().expect("the fused op");
    let core = TensorDesc::new(DType::F32, &desc.outputs[0].shape);
    let plain = OpDesc::new(gdn, desc.inputs[..6].to_vec(), vec![core, desc.outputs[1].clone()]);
    if let Support::No(r) = gdn::supports(b, &plain) {
        return Support::No(r);
    }
    // gdn_batch's workgroup memory plus a tile's squares
    let dk = desc.outputs[1].shape[2];
    let need = gdn::rec_smem(dk) + 4 * TJ_REC;
    if need > b.caps.max_workgroup_storage as usize {
        return Support::No(format!(
            "key head dim {dk} needs {need} B workgroup memory, device has {}",
            b.caps.max_workgroup_storage
        ));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::GdnBatchNorm { eps } = *op else { unreachable!() };
    let (mut p, mut bindings) = gdn::params(op, i, &o[1].shape[1..])?;
    let (t, nv, dk, dv) = (p.t as usize, p.nv as usize, p.dk as usize, p.dv as usize);
    let s = i[5].shape[0];
    if t == 0 {
        return Ok(());
    }
    if b.invariance() != BatchInvariance::Off || t != s {
        let core = b.scratch("gdn_batch_norm_o", DType::F32, t * nv * dv)?;
        gdn::record(b, &Op::GdnBatch, &i[..6], &[&core, o[1]])?;
        return rms_norm_gated::dispatch(b, eps, [&core, i[6], i[7], o[0]]);
    }
    let ntiles = dv.div_ceil(TJ_REC);
    p.n = ntiles as u32;
    let bp = BatchParams::new(&p, s, o[1].shape[0], eps);
    // the counters have their own scratch: zero when made, and left zero by every dispatch
    let cnt = b.scratch("gdn_batch_norm_counters", DType::U32, t * nv)?;
    let rec = b.scratch("gdn_batch_norm_records", DType::U32, t * nv * (dv + ntiles))?;
    bindings.extend([
        read("seqs", DType::U32),
        read("z", i[6].dtype),
        read("w", i[7].dtype),
        write("o", o[0].dtype),
        write("state", DType::F32),
        atomic("cnt"),
        atomic("rec"),
    ]);
    let key = KernelKey {
        entry: "gdn_batch_norm",
        bindings,
        variant: format!("dk{dk}"),
    };
    let mut consts = gdn::rec_consts(dk);
    consts.push(("GMAX", format!("{}u", dv.div_ceil(NT))));
    let src = ["gdn_recurrent_tile.wgsl", "gdn_batch.wgsl", "gdn_batch_norm.wgsl"]
        .map(|f| b.source(f))
        .join("\n");
    let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7], o[0], o[1], &cnt, &rec];
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
