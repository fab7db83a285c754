//! linear_add_rms_norm with a block-quantized W over one row (a lone decode step's o and down
//! projections, batch invariance off): the qmatvec, whose last workgroup to finish adds the
//! residual and normalizes the row (shaders/qmatvec_norm_after.wgsl), so a quantized step records
//! no add_rms_norm dispatch between its projections. The residual add + norm cannot go inside the
//! next projection as the float matvec's does (add_rms_norm_linear): every workgroup of a quantized
//! matvec loading and squaring the row cost more than the dispatch it saved (r37, measured on an
//! H100). Its bits: y is the linear's; the sum of squares is added in another order than
//! add_rms_norm's, which batch invariance off allows (one row, so never another batch's).
use super::launch::{launch_linear, Epi, NormAfter};
use super::plan::{lanes, Kind, Lanes};
use crate::backend::wgpu::{Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

/// Whether the fused op takes these operands (x, w, a, nw) -> (y, sum, h): one row under batch
/// invariance off, every vector f32; else refused by name (the model records linear and
/// add_rms_norm).
pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let (x, w) = (&i[0], &i[1]);
    if b.invariance() != BatchInvariance::Off || x.shape[0] != 1 {
        return Support::No(format!(
            "a quantized projection's add + norm fuses for one row under batch invariance off (got {} rows, {:?})",
            x.shape[0],
            b.invariance()
        ));
    }
    let vectors = [&i[2], &i[3], &o[0], &o[1], &o[2]];
    if x.dtype != DType::F32 || vectors.iter().any(|t| t.dtype != DType::F32) {
        return Support::No(format!(
            "the fused add + norm after a {} projection reads and writes f32 rows",
            w.dtype
        ));
    }
    super::supports(b, desc)
}

/// Records the op: i = (x, w, a, nw), o = (y, sum, h); `supports` said yes. Where the weight takes
/// qmatvec_xs (a big q4_k matrix: x's limbs made in workgroup memory, no epilogue) the linear and
/// then add_rms_norm, the two dispatches the model would otherwise record.
pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::LinearAddRmsNorm { eps, unit_offset } = *op else {
        unreachable!("quant norm_after got {}", op.name())
    };
    let (x, w) = (i[0], i[1]);
    let l = lanes(b, x, w)?;
    if l == Lanes::LimbsWg {
        super::record_linear(b, &[x, w], &[o[0]])?;
        let norm = Op::AddRmsNorm { eps, unit_offset };
        return crate::backend::wgpu::rms_norm::record_add(b, &norm, &[i[2], o[0], i[3]], &o[1..]);
    }
    let kind = Kind::Matvec {
        sg: b.caps.subgroup,
        lanes: l,
    };
    let na = NormAfter {
        a: i[2],
        nw: i[3],
        sum: o[1],
        h: o[2],
        eps,
        unit_offset,
    };
    launch_linear(b, kind, None, None, Epi::NormAfter(na), x, w, o[0])
}
