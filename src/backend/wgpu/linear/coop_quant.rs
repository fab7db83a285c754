//! A quantized linear's prefill on cooperative matrices: the tensor-core GEMM of coop.rs with W read
//! through the quant type file's exact dequantizer (`wq4`, as the matvec and embedding read it) and
//! split into f16 hi + lo like x, so each output is the four products x_hi·w_hi + x_lo·w_hi +
//! x_hi·w_lo + x_lo·w_lo (shaders/linear_coop.wgsl `stage_wq`, `finish_q`): a weight row is two
//! tile columns. Taken where the 16-bit GEMM is (batch invariance off, M from `COOP_FROM`, f32 x
//! and y, an adapter with cooperative matrices); under either invariant mode the quantized linear
//! stays on the matvec, whose rows do not depend on M.
use super::coop::{self, Coop, WSrc};
use super::{COOP_FROM, COOP_GEMM};
use crate::backend::wgpu::kernel::grid;
use crate::backend::wgpu::quant::{type_src, Params};
use crate::backend::wgpu::WgpuBackend;
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The coop shape a quantized linear y = x · Wᵀ takes on `b`, if any.
pub fn quant_coop_plan(b: &WgpuBackend, x: &Tensor, w: &Tensor, y: &Tensor) -> Option<Coop> {
    quant_coop_for(b, x.shape[0], [x.dtype, w.dtype, y.dtype])
}

/// The coop shape of a quantized linear of `m` x rows with these (x, w, y) dtypes on `b`, if any.
pub(super) fn quant_coop_for(b: &WgpuBackend, m: usize, [xd, wd, yd]: [DType; 3]) -> Option<Coop> {
    let c = coop::on(b, COOP_GEMM);
    (wd.is_quant()
        && xd == DType::F32
        && yd == DType::F32
        && b.invariance() == BatchInvariance::Off
        && m >= COOP_FROM
        && coop::fits(b, c))
    .then_some(c)
}

/// Records the quantized linear on `c` (from `quant_coop_plan`).
pub fn record_quant_coop(b: &WgpuBackend, c: Coop, x: &Tensor, w: &Tensor, y: &Tensor) -> Result<()> {
    let (m, k, n) = (x.shape[0], x.shape[1], w.shape[0]);
    // x's 16-byte loads where its rows start on 4 floats
    let aligned = k % 4 == 0 && x.offset % 4 == 0;
    let (key, consts) = coop::spec(c, w.dtype, aligned, false);
    let p = Params::linear(x, w, y)?;
    // a weight row is two tile columns: BN / 2 outputs a workgroup
    let groups = n.div_ceil(c.bn() as usize / 2) * m.div_ceil(c.tok() as usize);
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    b.dispatch(
        &key,
        || (body(b, c, aligned, w.dtype).to_string(), consts.clone()),
        bytemuck::bytes_of(&p),
        &[x, w, y],
        grid(groups as u32),
    )
}

/// The kernel's WGSL on `b`'s sources, built once per (source set, shape, x alignment, dtype).
fn body(b: &WgpuBackend, c: Coop, aligned: bool, d: DType) -> &'static str {
    type Bodies = HashMap<(u64, Coop, bool, DType), &'static str>;
    static CACHE: OnceLock<Mutex<Bodies>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry((b.sources_id(), c, aligned, d)).or_insert_with(|| {
        let (ty, extra) = type_src(d);
        let prefix = format!("{}\n{extra}{}\n", b.source("qcommon.wgsl"), b.source(ty));
        let src = coop::coop_body_of(
            b.source("linear_coop.wgsl"),
            c,
            aligned,
            false,
            WSrc::Quant { prefix: &prefix },
        );
        Box::leak(src.into_boxed_str())
    })
}
