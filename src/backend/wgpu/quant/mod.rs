//! Block-quantized weights (GGUF q8_0, q4_0, q4_1, q4_k, q6_k, iq4_nl) kept quantized in device
//! memory: `linear` with a quantized w and `embedding` / `embedding_shard` with a quantized table.
//! The kernels read the raw blocks as u32 words and dequantize in registers; a weight is never
//! expanded in device memory.
//!
//! The wgpu device keeps GGUF's byte order except for q8_0, whose blocks are regrouped eight at a
//! time as their quants then their scales (qlayout.rs, called by context/buffers.rs' upload / download:
//! the same bytes, word-aligned quants).
//!
//! A kernel is three or four WGSL files: shaders/qcommon.wgsl (Params, word/f16/byte readers),
//! the type file (q8_0.wgsl, q4_0.wgsl (also iq4_nl), q4_1.wgsl, q4_k.wgsl, q6_k.wgsl: the block
//! layout as a matvec lane `lane_dot` and an exact 4-element dequantizer `wq4`) and the entry file:
//! * `qmatvec` (shaders/qmatvec.wgsl), every M (rows independent of M): WG threads x R rows a workgroup, one x
//!   row, threads striding over the row's lane slots (coalesced weight and x reads; the x values
//!   serve all R rows; subgroup reduction where available). Its lanes: shaders/qlanes.wgsl
//!   (scalar words, any x dtype) or, for q4_k and q8_0 with f32 x and rows on 16 bytes, the
//!   type's vec4 lanes (q4_k_v4.wgsl, q8_0_v4.wgsl: 16-byte weight and x loads), or for big q4_k
//!   matrices its integer-dot lanes (q4_k_dp.wgsl) over x as byte limbs (limbs.wgsl) from the
//!   xlimbs.wgsl pre-pass or made by the workgroup (entry shaders/qmatvec_xs.wgsl).
//! * qmatvec's `norm` variant (add_rms_norm_linear, a lone decode step: `record_add_norm`): x read
//!   as rms_norm(a + b, nw) by shaders/qx_norm.wgsl ahead of the vec4 or word lanes, the row's sum of
//!   squares reduced beside the outputs, which it scales; a, b and nw 16 bytes at a time where all
//!   are f32 on 16 bytes (the `nv4` variant), else element by element.
//! * `qembedding` (shaders/qembed.wgsl): 4 elements of one row per invocation.
//! * A prefill (batch invariance off, M from 64, f32 x and y) where the adapter has cooperative
//!   matrices: linear/coop_quant.rs, the tensor-core GEMM with this type file's `wq4` as its
//!   weight loader.
//!
//! The weight's position is passed as a byte offset (`wbase`) in Params; the dispatcher's element
//! offset slot for it is unused.
//!
//! plan.rs picks the kernel, lanes and workgroup shape; launch.rs builds the body and records it.
mod launch;
mod plan;
#[cfg(test)]
mod tests;

use super::kernel::{grid, read, read4, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};
pub(super) use launch::type_src;
use launch::{body, launch_linear, QNorm, XIn};
use plan::{lanes, limb_sized, sg32, v4_rows, Kind, Lanes};

/// u32 words of x limbs a 32-element block (xlimbs.wgsl).
const LIMB_WORDS: usize = 28;

const EMBED_WG: u32 = 128;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct Params {
    pub(super) offs: [u32; 8],
    pub(super) m: u32,
    pub(super) n: u32,
    pub(super) k: u32,
    pub(super) wbase: u32,
    pub(super) rowb: u32,
    pub(super) first: u32,
    pub(super) pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

impl Params {
    /// A linear's: x [M, K], the quantized w [N, K] (its byte offset and row bytes), y; x and y
    /// must end below u32 element indices (the kernels' index type).
    pub(super) fn linear(x: &Tensor, w: &Tensor, y: &Tensor) -> Result<Self> {
        for t in [x, y] {
            if t.offset + t.numel() + 4 > u32::MAX as usize {
                return Err(Error::Other(format!("linear: {t:?} reaches past u32 element indices")));
            }
        }
        let k = x.shape[1];
        Ok(Params {
            offs: [0; 8],
            m: x.shape[0] as u32,
            n: w.shape[0] as u32,
            k: k as u32,
            wbase: wbase(w, "linear")?,
            rowb: w.dtype.nbytes(k) as u32,
            first: 0,
            pad: [0; 2],
        })
    }
}

pub(super) fn x_kind(d: DType) -> u32 {
    match d {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
        _ => unreachable!("quant linear: x must be a float dtype, got {d}"),
    }
}

/// The byte offset of a quantized tensor in its buffer (a whole number of word-aligned blocks).
pub(super) fn wbase(t: &Tensor, what: &str) -> Result<u32> {
    let b = t.byte_offset();
    if b % 4 != 0 || (b + t.nbytes()) as u64 > u32::MAX as u64 {
        return Err(Error::Other(format!(
            "{what}: {t:?} starts at byte {b}: not word aligned or past u32 byte addresses"
        )));
    }
    Ok(b as u32)
}

/// Size limits of the quantized kernels (the contract itself is `OpDesc::check`).
pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let w = &desc.inputs[0..2]
        .iter()
        .find(|t| t.dtype.is_quant())
        .expect("quant::supports without a quantized operand");
    if w.nbytes() as u64 + 4 >= u32::MAX as u64 {
        return Support::No(format!(
            "a {} byte {} operand: the quantized kernels address bytes with 32 bits",
            w.nbytes(),
            w.dtype
        ));
    }
    if desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .any(|t| t.numel() > u32::MAX as usize / 2)
    {
        return Support::No("an operand has more than 2^31 elements".into());
    }
    Support::Yes
}

/// linear with a quantized w: y[M, N] = x[M, K] · W[N, K]ᵀ.
pub fn record_linear(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (x, w, y) = (i[0], i[1], o[0]);
    let (m, n) = (x.shape[0], w.shape[0]);
    if m == 0 || n == 0 {
        return Ok(());
    }
    // A prefill (batch invariance off, M from linear's COOP_FROM) on the tensor cores where the
    // adapter has them (linear/coop_quant.rs).
    if let Some(c) = super::linear::quant_coop_plan(b, x, w, y) {
        return super::linear::record_quant_coop(b, c, x, w, y);
    }
    // Else the matvec for every M (one x row a workgroup: W is read M times, mostly from cache), so a
    // row of y is the same bits whatever M is (batch-invariant serving; see linear::plan).
    let kind = match lanes(b, x, w)? {
        Lanes::LimbsWg => Kind::Matvec {
            sg: sg32(b),
            lanes: Lanes::LimbsWg,
        },
        l => Kind::Matvec {
            sg: b.caps.subgroup,
            lanes: l,
        },
    };
    launch_linear(b, kind, None, None, false, x, w, y, None, None)
}

/// linear_swiglu with a quantized w: y[M, N / 2] = the swiglu of each (gate, up) pair of x · Wᵀ.
/// In the qmatvec's epilogue where the linear takes that kernel with whole pairs in a workgroup
/// (an even R): one dispatch where it was the linear and swiglu_pairs. Else (qmatvec_xs, three
/// rows a workgroup; a tensor-core prefill, which `supports` refuses) the linear into a scratch,
/// then swiglu. The
/// epilogue computes swiglu_pairs.wgsl's formula on the sums the linear would have stored.
pub fn record_linear_swiglu(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (x, w, y) = (i[0], i[1], o[0]);
    let (m, k, n) = (x.shape[0], x.shape[1], w.shape[0]);
    if m == 0 || n == 0 {
        return Ok(());
    }
    let l = lanes(b, x, w)?;
    let pairs = l != Lanes::LimbsWg && plan::matvec_plan(n, k, l).1 % 2 == 0 && n % 2 == 0;
    if pairs && super::linear::quant_coop_plan(b, x, w, y).is_none() {
        let kind = Kind::Matvec {
            sg: b.caps.subgroup,
            lanes: l,
        };
        return launch_linear(b, kind, None, None, true, x, w, y, None, None);
    }
    let gate_up = b.scratch("linear-swiglu-pairs", DType::F32, m * n)?.reshape(&[m, n])?;
    record_linear(b, &[x, w], &[&gate_up])?;
    super::elementwise::record(b, &Op::SwiGlu, &[&gate_up], &[y])
}

/// The lanes of add_rms_norm_linear's matvec over this quantized weight: the vec4 lanes where
/// the type has them and w's rows start on 16 bytes, else the word lanes (both read x as floats).
fn norm_lanes(w: &Tensor) -> Result<Lanes> {
    Ok(match v4_rows(w)? {
        true => Lanes::V4,
        false => Lanes::Words,
    })
}

/// Whether add_rms_norm_linear's matvec takes this quantized weight [N, K]: its lanes read x
/// element by element (the vec4 or the word lanes), so a q4_k matrix that the plain linear gives
/// the integer-dot lanes (faster there than x read as floats) keeps add_rms_norm and the linear
/// apart; its workgroups hold fewer than 8 weight rows (the row's sum of squares takes the
/// slot after theirs) and, with the swiglu epilogue, whole (gate, up) pairs.
/// `op` names the fused op (add_rms_norm_linear or rms_norm_linear), `norm` the norm it
/// records apart where refused.
pub fn supports_add_norm(b: &WgpuBackend, (op, norm): (&str, &str), w: &TensorDesc, swiglu: bool) -> Support {
    let (n, k) = (w.shape[0], w.shape[1]);
    if limb_sized(b, w.dtype, n, k) {
        return Support::No(format!(
            "{op}: a {} weight [{n}, {k}] takes the integer-dot lanes, which read x as limbs of \
             the stored rows: {norm}, then the linear",
            w.dtype
        ));
    }
    // (the lanes' plans differ only in the limb lanes' shapes, refused above)
    let r = plan::matvec_plan(n, k, Lanes::Words).1;
    if r >= 8 || (swiglu && (r % 2 != 0 || n % 2 != 0)) {
        return Support::No(format!(
            "{op}: a {} weight [{n}, {k}] takes {r} rows a workgroup: the fused matvec takes fewer \
             than 8{}; {norm}, then the linear",
            w.dtype,
            if swiglu { ", whole (gate, up) pairs" } else { "" }
        ));
    }
    Support::Yes
}

/// add_rms_norm_linear (`summed`: b and sum) or rms_norm_linear with a quantized w: the matvec
/// of `record_linear` (`norm_lanes`) reading x as rms_norm(a + b, nw) or rms_norm(a, nw)
/// (qx_norm.wgsl: a, b and nw 16 bytes at a time on the vec4 lanes where all are f32 on 16-byte
/// starts, else element by element), one dispatch for a lone sequence's step where the norm and
/// the linear were two; with `swiglu`, y is the swiglu of each (gate, up) pair of outputs (the
/// qmatvec's epilogue). The op's fields come from linear/add_norm.rs, which records both ops.
#[allow(clippy::too_many_arguments)]
pub fn record_add_norm(
    b: &WgpuBackend,
    (eps, unit_offset, swiglu): (f32, bool, bool),
    a: &Tensor,
    nw: &Tensor,
    w: &Tensor,
    y: &Tensor,
    summed: Option<(&Tensor, &Tensor)>,
) -> Result<()> {
    let kind = Kind::Matvec {
        sg: b.caps.subgroup,
        lanes: norm_lanes(w)?,
    };
    let norm = QNorm {
        eps,
        unit_offset,
        nw,
        add: summed,
    };
    launch_linear(b, kind, None, None, swiglu, a, w, y, Some(&norm), None)
}

/// Whether linear_add's matvec takes this quantized weight [N, K]: the qmatvec entry (its
/// epilogue adds the residual), not the integer-dot lanes' qmatvec_xs, which a q4_k matrix of
/// `limb_sized` may take.
pub fn supports_linear_add(b: &WgpuBackend, w: &TensorDesc) -> Support {
    let (n, k) = (w.shape[0], w.shape[1]);
    if limb_sized(b, w.dtype, n, k) {
        return Support::No(format!(
            "linear_add: a {} weight [{n}, {k}] may take the integer-dot lanes' qmatvec_xs, which has no \
             residual epilogue: linear, then add",
            w.dtype
        ));
    }
    Support::Yes
}

/// linear_add with a quantized w: the matvec of `record_linear` with the residual `r` added to
/// each output in its epilogue (qmatvec.wgsl's `radd` lines); `supports_linear_add` said yes.
pub fn record_linear_add(b: &WgpuBackend, x: &Tensor, w: &Tensor, r: &Tensor, y: &Tensor) -> Result<()> {
    let kind = Kind::Matvec {
        sg: b.caps.subgroup,
        lanes: lanes(b, x, w)?,
    };
    launch_linear(b, kind, None, None, false, x, w, y, None, Some(r))
}

/// embedding / embedding_shard with a quantized table [V, D] (D a whole number of blocks).
pub fn record_embed(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (table, ids, y) = (i[0], i[1], o[0]);
    let first = match op {
        Op::Embedding => 0,
        Op::EmbeddingShard { first } => *first,
        _ => unreachable!("quant::record_embed got {}", op.name()),
    };
    let (v, d) = (table.shape[0], table.shape[1]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    if first + v > u32::MAX as usize {
        return Err(Error::Other(format!(
            "embedding: vocabulary rows up to {} exceed u32",
            first + v
        )));
    }
    let shard = matches!(op, Op::EmbeddingShard { .. });
    let key = KernelKey {
        entry: "qembedding",
        bindings: vec![read4("w", table.dtype), read("ids", DType::U32), write("y", y.dtype)],
        variant: if shard { "shard".into() } else { String::new() },
    };
    let consts = [("WG", format!("{EMBED_WG}u")), ("SHARD", shard.to_string())];
    let rowb = table.dtype.nbytes(d) as u32;
    let p = Params {
        offs: [0; 8],
        m: ids.numel() as u32,
        n: v as u32,
        k: d as u32,
        wbase: wbase(table, "embedding")?,
        rowb,
        first: first as u32,
        pad: [0; 2],
    };
    let groups = (n.div_ceil(4) as u32).div_ceil(EMBED_WG);
    b.dispatch(
        &key,
        || {
            (
                body(b, Kind::Embed, table.dtype, XIn::Given, false).to_string(),
                consts.to_vec(),
            )
        },
        bytemuck::bytes_of(&p),
        &[table, ids, y],
        grid(groups),
    )
}
