//! linear_add_rms_norm: a projection, then the residual add + RMSNorm of its output. Where the
//! projection is a split-K tensor-core linear (`BatchInvariance::ManyRows`, a weight matrix below
//! the vocabulary size: the serving engine's projections at every batch), its partials are added
//! inside the norm's kernel (add_rms_norm.wgsl after shaders/linear_add_rms_norm.wgsl, whose `ld_b`
//! sums them in split order, as linear_splitk.wgsl does, and stores y), so the op is two dispatches
//! where linear and add_rms_norm are three, with the same bits. Elsewhere the device refuses it by
//! name and the model records the two ops.
use super::{coop_dtypes, coop_pass, split, split_sum};
use crate::backend::wgpu::kernel::{read, write};
use crate::backend::wgpu::rms_norm::dispatch_rows;
use crate::backend::wgpu::shaders::fill;
use crate::backend::wgpu::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

pub fn supports_norm_after(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let lin = OpDesc::new(Op::Linear, i[..2].to_vec(), vec![o[0].clone()]);
    if let Support::No(r) = super::supports(b, &lin) {
        return Support::No(r);
    }
    let norm = OpDesc::new(
        Op::AddRmsNorm {
            eps: 0.0,
            unit_offset: false,
        },
        vec![i[2].clone(), o[0].clone(), i[3].clone()],
        o[1..].to_vec(),
    );
    if let Support::No(r) = crate::backend::wgpu::rms_norm::supports(b, &norm) {
        return Support::No(r);
    }
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    if split(b, (m, k, n), coop_dtypes(i[0].dtype, i[1].dtype, o[0].dtype)).is_none() {
        return Support::No(format!(
            "a {m} x {k} x {n} projection here sums in its own kernel (no split-K partials for the \
             norm to add): run linear and add_rms_norm apart"
        ));
    }
    Support::Yes
}

/// Records the op: i = (x, w, a, nw), o = (y, sum, h); `supports_norm_after` said yes.
pub fn record_norm_after(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::LinearAddRmsNorm { eps, unit_offset } = *op else {
        unreachable!("norm_after::record got {}", op.name())
    };
    let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
    let dtypes = coop_dtypes(i[0].dtype, i[1].dtype, o[0].dtype);
    let (c, splits) = split(b, (m, k, n), dtypes).expect("supports_norm_after said yes");
    let part = b.scratch("linear-splitk", DType::F32, splits * m * n)?;
    coop_pass(b, c, &i[..2], &part, false)?;
    // add_rms_norm.wgsl with b the linear's output: its partials summed in split order
    // (linear_add_rms_norm.wgsl), y stored on the way
    let src = || {
        let sum = fill(b.source("linear_add_rms_norm.wgsl"), &[("sum", split_sum(splits))]);
        format!("{sum}\n{}", b.source("add_rms_norm.wgsl"))
    };
    let bindings = vec![
        read("a", i[2].dtype),
        read("x", DType::F32),
        read("w", i[3].dtype),
        write("sum", o[1].dtype),
        write("y", o[2].dtype),
        write("lin", DType::F32),
    ];
    let tensors = [i[2], &part, i[3], o[1], o[2], o[0]];
    let variant = format!("_splits{splits}");
    dispatch_rows(
        b,
        "add_rms_norm",
        &variant,
        src,
        bindings,
        &tensors,
        n,
        eps,
        unit_offset,
    )
}
