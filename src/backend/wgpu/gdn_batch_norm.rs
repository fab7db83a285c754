//! gdn_batch_norm: gdn_batch with the gated RMSNorm per value head in its epilogue
//! (shaders/gdn_batch_norm.wgsl after gdn_recurrent_tile.wgsl and gdn_batch.wgsl). A workgroup
//! holds a whole head: TJ = dv rounded up to a power of two, the same LANES a column as
//! gdn_batch, so the recurrence is gdn_batch's bits and the norm is rms_norm_gated's partials.
//! A lone sequence's prefill chunk under invariance off takes gdn_batch's chunked form instead
//! (gdn.rs `lone_chunked`), into a scratch o, then rms_norm_gated: two kernels, as the
//! composition.
use super::gdn::{self, BatchParams, LANES};
use super::kernel::{read, write, KernelKey};
use super::rms_norm::row_wg;
use super::{rms_norm_gated, Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// (TJ, workgroup size) for heads of `dv` value columns.
fn shape(dv: usize) -> (usize, usize) {
    let tj = dv.next_power_of_two();
    (tj, LANES * tj)
}

/// Workgroup memory: gdn_batch's (rec_smem at this workgroup size) plus wg_sum's tree and the
/// head's row of o.
fn smem(dk: usize, tj: usize, nt: usize) -> usize {
    4 * (2 * dk + 4 * nt + nt + tj)
}

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (gdn, _) = desc.op.gdn_batch_norm_parts().expect("the fused op");
    let core = TensorDesc::new(DType::F32, &desc.outputs[0].shape);
    let plain = OpDesc::new(gdn, desc.inputs[..6].to_vec(), vec![core, desc.outputs[1].clone()]);
    if let Support::No(r) = gdn::supports(b, &plain) {
        return Support::No(r);
    }
    let pool = &desc.outputs[1].shape;
    let (dk, dv) = (pool[2], pool[3]);
    let (tj, nt) = shape(dv);
    if nt > b.caps.max_invocations as usize {
        return Support::No(format!(
            "a head of {dv} value columns in one workgroup needs {nt} invocations, device has {}",
            b.caps.max_invocations
        ));
    }
    let need = smem(dk, tj, nt);
    if need > b.caps.max_workgroup_storage as usize {
        return Support::No(format!(
            "heads of dk {dk}, dv {dv} need {need} B workgroup memory, device has {}",
            b.caps.max_workgroup_storage
        ));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::GdnBatchNorm { eps } = *op else { unreachable!() };
    let (mut p, mut bindings) = gdn::params(op, i, &o[1].shape[1..])?;
    let (t, nv, dk, dv) = (p.t as usize, p.nv as usize, p.dk as usize, p.dv as usize);
    if t == 0 {
        return Ok(());
    }
    if gdn::lone_chunked(b, i, o, t, dk) {
        let core = b.scratch("gdn_batch_norm_o", DType::F32, t * nv * dv)?;
        gdn::record(b, &Op::GdnBatch, &i[..6], &[&core, o[1]])?;
        return rms_norm_gated::dispatch(b, eps, [&core, i[6], i[7], o[0]]);
    }
    let (tj, nt) = shape(dv);
    p.n = 1;
    let (s, slots) = (i[5].shape[0], o[1].shape[0]);
    let bp = BatchParams::new(&p, s, slots, eps, row_wg(dv));
    bindings.extend([
        read("seqs", DType::U32),
        read("z", i[6].dtype),
        read("w", i[7].dtype),
        write("o", o[0].dtype),
        write("state", DType::F32),
    ]);
    let key = KernelKey {
        entry: "gdn_batch_norm",
        bindings,
        variant: format!("dk{dk}tj{tj}"),
    };
    let consts = [
        ("DK", format!("{dk}u")),
        ("NT", format!("{nt}u")),
        ("TJ", format!("{tj}u")),
        ("RMAX", format!("{}u", dk.div_ceil(LANES))),
        ("WG", format!("{nt}u")),
    ];
    let src = [
        "gdn_recurrent_tile.wgsl",
        "gdn_batch.wgsl",
        "wg_tree.wgsl",
        "gdn_batch_norm.wgsl",
    ]
    .map(|f| b.source(f))
    .join("\n");
    let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7], o[0], o[1]];
    gdn::launch(b, &key, &src, &consts, bytemuck::bytes_of(&bp), &tensors, s * nv)
}
