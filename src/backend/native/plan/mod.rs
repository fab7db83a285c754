//! Which hip/ kernel runs an op, with which dtype substitutions, grid and arguments; and what
//! the native kernels refuse (by name, with the reason). Shared by the cuda and hip backends.
mod gdn;
mod hybrid;
mod paged;
mod quant;
mod sample;

use super::{Arg, ModuleKey};
use crate::backend::Support;
use crate::dtype::DType;
use crate::op::{Op, OpDesc};

/// Threads per block in every hip/ kernel (WG_BLOCK in hip/wgllm_hip.h).
pub const BLOCK: u32 = 256;
/// Largest M the matvec kernel takes (MV_MAX_M in hip/matvec.hip); larger M goes to gemm.
const MATVEC_MAX_M: usize = 4;
/// Waves sharing one output column in matvec.hip: two below MATVEC_ONE_WAVE_FROM rows, one from
/// there on (a gate/up projection, an LM head: blocks enough with one wave a column). Of 1, 2 and
/// 4 waves this was the fastest or within ~10% of it at each decode projection of Qwen3-0.6B on an
/// H200, where the previous fixed 4 ran the LM head 2.2x slower.
const MATVEC_SPLIT: u32 = 2;
const MATVEC_ONE_WAVE_FROM: usize = 4096;
/// attention.hip keeps one output dim per thread.
const ATTENTION_MAX_DH: usize = BLOCK as usize;
/// gemm.hip's output tile (GT).
const GEMM_TILE: usize = 64;
/// Blocks of a grid-stride elementwise launch.
pub(super) const MAX_BLOCKS: usize = 1 << 16;

/// One kernel launch.
#[derive(Clone, Debug)]
pub struct Launch {
    pub module: ModuleKey,
    pub entry: &'static str,
    pub grid: (u32, u32),
    pub args: Vec<Arg>,
}

/// The C type of a float operand in the kernels (the `T_*` substitution).
pub(super) fn ty(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F16 => "wg_f16",
        DType::BF16 => "wg_bf16",
        // the contract (OpDesc::check) keeps integer dtypes out of float operands
        DType::I32 | DType::U32 => "u32",
        // quantized operands are refused by `supports` before any plan is made
        q => unreachable!("native plan: no C type for the quantized {q}"),
    }
}

/// The family-independent checks, then each op's limits.
pub fn supports(desc: &OpDesc) -> Support {
    if let Err(e) = desc.check() {
        return Support::No(e.to_string());
    }
    for t in desc.inputs.iter().chain(&desc.outputs) {
        if t.numel() > u32::MAX as usize {
            return Support::No(format!(
                "an operand of {} elements: the hip/ kernels index with 32 bits",
                t.numel()
            ));
        }
    }
    if desc.inputs.iter().any(|t| t.dtype.is_quant()) {
        return quant::supports(desc);
    }
    let i = &desc.inputs;
    match &desc.op {
        Op::Attention { .. } => {
            let dh = i[0].shape[2];
            if dh > ATTENTION_MAX_DH {
                return Support::No(format!(
                    "head_dim {dh} > {ATTENTION_MAX_DH}: hip/attention.hip keeps one output dim per thread"
                ));
            }
            Support::Yes
        }
        Op::SwiGluLinear => Support::No(
            "no fused hip/ kernel for swiglu into the down projection yet: run swiglu and linear apart".into(),
        ),
        Op::AddRmsNormLinear { .. } => Support::No(
            "no fused hip/ kernel for a residual add + rms_norm read inside the projection yet: run add_rms_norm and linear apart"
                .into(),
        ),
        Op::LinearAddRmsNorm { .. } => Support::No(
            "no fused hip/ kernel for a projection's output added and normed in one op yet: run linear and add_rms_norm apart"
                .into(),
        ),
        Op::LinearAdd => Support::No(
            "no fused hip/ kernel for a projection with the residual added in its epilogue yet: run linear and add apart"
                .into(),
        ),
        Op::RmsNormLinear { .. } => Support::No(
            "no fused hip/ kernel for an rms_norm read inside the projection yet: run rms_norm and linear apart".into(),
        ),
        Op::LinearRmsNormRopeKv { .. } => Support::No(
            "no fused hip/ kernel for a q/k/v projection with its norm, RoPE and cache write yet: run linear and rms_norm_rope_kv apart"
                .into(),
        ),
        Op::RmsNormRopeKvAttention { .. } => Support::No(
            "no fused hip/ kernel for the q/k norm, RoPE and cache write inside paged attention yet: run rms_norm_rope_kv and paged_attention apart"
                .into(),
        ),
        Op::LinearSwiGlu => Support::No(
            "no fused hip/ kernel for the gate/up projection's swiglu yet: run linear and swiglu apart".into(),
        ),
        Op::GdnConvNorm { .. } => Support::No(
            "no fused hip/ kernel for the conv, gated delta rule and gated norm yet: run causal_conv1d_batch, gdn_batch and rms_norm_gated apart"
                .into(),
        ),
        Op::Linear => {
            let m = i[0].shape[0];
            if m.div_ceil(GEMM_TILE) > 65535 {
                return Support::No(format!("M {m} needs more than 65535 gemm tile rows"));
            }
            Support::Yes
        }
        Op::Embedding => {
            if i[0].shape[1].div_ceil(BLOCK as usize) > 65535 {
                return Support::No("embedding row wider than 65535 blocks".into());
            }
            Support::Yes
        }
        Op::RmsNorm { .. }
        | Op::AddRmsNorm { .. }
        | Op::RmsNormRope { .. }
        | Op::RmsNormRopeKv { .. }
        | Op::Rope { .. }
        | Op::SwiGlu
        | Op::Add
        | Op::Softmax
        | Op::Argmax
        | Op::TopK { .. }
        | Op::Copy
        | Op::Cast => Support::Yes,
        Op::EmbeddingShard { .. }
        | Op::CausalConv1d
        | Op::CausalConv1dUpdate
        | Op::GdnRecurrent
        | Op::GdnChunked
        | Op::RmsNormGated { .. }
        | Op::GatedAttention { .. }
        | Op::CausalConv1dBatch
        | Op::GdnBatch => hybrid::supports(desc),
        Op::KvWrite | Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } => paged::supports(desc),
        Op::Penalties | Op::MinP | Op::Sample { .. } => sample::supports(desc),
    }
}

pub(super) fn module(file: &'static str, defines: &[(&'static str, DType)]) -> ModuleKey {
    ModuleKey {
        file,
        defines: defines.iter().map(|(k, d)| (*k, ty(*d))).collect(),
    }
}

pub(super) fn u(x: usize) -> u32 {
    x as u32
}

/// A grid-stride launch over `n` elements: (blocks, stride).
pub(super) fn stride_grid(n: usize) -> (u32, u64) {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, MAX_BLOCKS);
    (blocks as u32, blocks as u64 * BLOCK as u64)
}

/// The launches that run `desc` (already `supports`-checked) over device addresses `ins`/`outs`.
/// `wave` is the device's wave size (matvec puts one wave on each output column).
pub fn launches(desc: &OpDesc, ins: &[u64], outs: &[u64], wave: u32) -> Vec<Launch> {
    let (i, o) = (&desc.inputs, &desc.outputs);
    // every kernel takes its operands' addresses first (the inputs, then the outputs, in the op's
    // order), then its scalars
    let ptrs: Vec<Arg> = ins.iter().chain(outs).map(|&a| Arg::Ptr(a)).collect();
    let one = |module: ModuleKey, entry: &'static str, grid: (u32, u32), scalars: &[Arg]| {
        vec![Launch {
            module,
            entry,
            grid,
            args: [ptrs.as_slice(), scalars].concat(),
        }]
    };
    if i.iter().any(|t| t.dtype.is_quant()) {
        return quant::launches(desc, &ptrs, wave);
    }
    match &desc.op {
        Op::Embedding => {
            let (v, d, t) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
            one(
                module("embedding.hip", &[("T_TABLE", i[0].dtype), ("T_OUT", o[0].dtype)]),
                "embedding",
                (u(t), u(d.div_ceil(BLOCK as usize))),
                &[Arg::U32(u(v)), Arg::U32(u(d))],
            )
        }
        Op::RmsNorm { eps, unit_offset } => {
            let d = i[1].shape[0];
            let rows = i[0].numel() / d;
            one(
                module(
                    "rms_norm.hip",
                    &[("T_X", i[0].dtype), ("T_W", i[1].dtype), ("T_Y", o[0].dtype)],
                ),
                "rms_norm",
                (u(rows), 1),
                &[Arg::U32(u(d)), Arg::F32(*eps), Arg::U32(*unit_offset as u32)],
            )
        }
        Op::AddRmsNorm { eps, unit_offset } => {
            let d = i[2].shape[0];
            let rows = i[0].numel() / d;
            one(
                module(
                    "add_rms_norm.hip",
                    &[
                        ("T_A", i[0].dtype),
                        ("T_B", i[1].dtype),
                        ("T_W", i[2].dtype),
                        ("T_S", o[0].dtype),
                        ("T_Y", o[1].dtype),
                    ],
                ),
                "add_rms_norm",
                (u(rows), 1),
                &[Arg::U32(u(d)), Arg::F32(*eps), Arg::U32(*unit_offset as u32)],
            )
        }
        Op::RmsNormRope { eps, rotary_dim } => {
            let s = &i[0].shape;
            one(
                module(
                    "rms_norm_rope.hip",
                    &[("T_X", i[0].dtype), ("T_W", i[1].dtype), ("T_Y", o[0].dtype)],
                ),
                "rms_norm_rope",
                (u(s[0] * s[1]), 1),
                &[
                    Arg::U32(u(s[1])),
                    Arg::U32(u(s[2])),
                    Arg::U32(u(rotary_dim / 2)),
                    Arg::U32(u(i[3].shape[0])),
                    Arg::F32(*eps),
                    // a weight row a head, or one for all
                    Arg::U32(if i[1].shape.len() == 2 { u(s[2]) } else { 0 }),
                ],
            )
        }
        Op::RmsNormRopeKv { eps, rotary_dim } => {
            let (t, hq, dh) = (o[0].shape[0], o[0].shape[1], o[0].shape[2]);
            let p = &o[1].shape;
            one(
                module(
                    "rms_norm_rope.hip",
                    &[
                        ("T_X", i[0].dtype),
                        ("T_W", i[1].dtype),
                        ("T_Y", o[0].dtype),
                        ("T_KV", o[1].dtype),
                    ],
                ),
                "rms_norm_rope_kv",
                (u(t * (hq + 2 * p[2])), 1),
                &[
                    Arg::U32(u(hq)),
                    Arg::U32(u(p[2])),
                    Arg::U32(u(dh)),
                    Arg::U32(u(rotary_dim / 2)),
                    Arg::U32(u(i[3].shape[0])),
                    Arg::F32(*eps),
                    Arg::U32(if i[1].shape.len() == 2 { u(dh) } else { 0 }),
                    Arg::U32(u(p[0] * p[1])),
                ],
            )
        }
        Op::Rope { rotary_dim } => {
            let s = &i[0].shape;
            one(
                module("rope.hip", &[("T_X", i[0].dtype), ("T_Y", o[0].dtype)]),
                "rope",
                (u(s[0] * s[1]), 1),
                &[
                    Arg::U32(u(s[1])),
                    Arg::U32(u(s[2])),
                    Arg::U32(u(rotary_dim / 2)),
                    Arg::U32(u(i[2].shape[0])),
                ],
            )
        }
        Op::SwiGluLinear
        | Op::LinearSwiGlu
        | Op::AddRmsNormLinear { .. }
        | Op::LinearAddRmsNorm { .. }
        | Op::LinearAdd
        | Op::RmsNormLinear { .. }
        | Op::RmsNormRopeKvAttention { .. }
        | Op::LinearRmsNormRopeKv { .. }
        | Op::GdnConvNorm { .. } => {
            unreachable!("{} is refused by supports on the native backends", desc.op.name())
        }
        Op::Linear => {
            let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
            let args = &[Arg::U32(u(m)), Arg::U32(u(n)), Arg::U32(u(k))];
            let defs = [("T_X", i[0].dtype), ("T_W", i[1].dtype), ("T_Y", o[0].dtype)];
            if m <= MATVEC_MAX_M {
                let waves = BLOCK / wave.max(1);
                let split = if n < MATVEC_ONE_WAVE_FROM {
                    MATVEC_SPLIT.min(waves)
                } else {
                    1
                };
                let cols = (waves / split).max(1) as usize;
                let args = &[Arg::U32(u(m)), Arg::U32(u(n)), Arg::U32(u(k)), Arg::U32(split)];
                one(module("matvec.hip", &defs), "matvec", (u(n.div_ceil(cols)), 1), args)
            } else {
                one(
                    module("gemm.hip", &defs),
                    "gemm",
                    (u(n.div_ceil(GEMM_TILE)), u(m.div_ceil(GEMM_TILE))),
                    args,
                )
            }
        }
        Op::Attention { n_past, scale } => {
            let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
            let hkv = i[1].shape[1];
            one(
                module(
                    "attention.hip",
                    &[("T_Q", i[0].dtype), ("T_KV", i[1].dtype), ("T_O", o[0].dtype)],
                ),
                "attention",
                (u(t * hq), 1),
                &[
                    Arg::U32(u(hq)),
                    Arg::U32(u(hkv)),
                    Arg::U32(u(dh)),
                    Arg::U32(u(*n_past)),
                    Arg::F32(*scale),
                ],
            )
        }
        Op::SwiGlu if i.len() == 1 => {
            let n = o[0].numel();
            let (blocks, stride) = stride_grid(n);
            one(
                module("elementwise.hip", &[("T_A", i[0].dtype), ("T_Y", o[0].dtype)]),
                "swiglu_pairs",
                (blocks, 1),
                &[Arg::U64(n as u64), Arg::U64(stride)],
            )
        }
        Op::SwiGlu | Op::Add => {
            let n = o[0].numel();
            let (blocks, stride) = stride_grid(n);
            let entry = if desc.op == Op::Add { "add" } else { "swiglu" };
            one(
                module(
                    "elementwise.hip",
                    &[("T_A", i[0].dtype), ("T_B", i[1].dtype), ("T_Y", o[0].dtype)],
                ),
                entry,
                (blocks, 1),
                &[Arg::U64(n as u64), Arg::U64(stride)],
            )
        }
        Op::Softmax => {
            let (r, c) = (i[0].shape[0], i[0].shape[1]);
            one(
                module("softmax.hip", &[("T_X", i[0].dtype), ("T_Y", o[0].dtype)]),
                "softmax",
                (u(r), 1),
                &[Arg::U32(u(c))],
            )
        }
        Op::Argmax => {
            let (r, c) = (i[0].shape[0], i[0].shape[1]);
            one(
                module("argmax.hip", &[("T_X", i[0].dtype)]),
                "argmax",
                (u(r), 1),
                &[Arg::U32(u(c))],
            )
        }
        Op::TopK { k } => {
            let (r, c) = (i[0].shape[0], i[0].shape[1]);
            one(
                module("topk.hip", &[("T_X", i[0].dtype)]),
                "topk",
                (u(r), 1),
                &[Arg::U32(u(c)), Arg::U32(u(*k))],
            )
        }
        Op::Copy => {
            let n = o[0].numel();
            let (blocks, stride) = stride_grid(n);
            let e = if i[0].dtype.size() == 2 { "u16" } else { "u32" };
            let m = ModuleKey {
                file: "convert.hip",
                defines: vec![("T_E", e)],
            };
            one(m, "copy", (blocks, 1), &[Arg::U64(n as u64), Arg::U64(stride)])
        }
        Op::Cast => {
            let n = o[0].numel();
            let (blocks, stride) = stride_grid(n);
            one(
                module("convert.hip", &[("T_X", i[0].dtype), ("T_Y", o[0].dtype)]),
                "cast",
                (blocks, 1),
                &[Arg::U64(n as u64), Arg::U64(stride)],
            )
        }
        Op::EmbeddingShard { .. }
        | Op::CausalConv1d
        | Op::CausalConv1dUpdate
        | Op::GdnRecurrent
        | Op::GdnChunked
        | Op::RmsNormGated { .. }
        | Op::GatedAttention { .. }
        | Op::CausalConv1dBatch
        | Op::GdnBatch => hybrid::launches(desc, &ptrs, wave),
        Op::KvWrite | Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } => paged::launches(desc, &ptrs, wave),
        Op::Penalties | Op::MinP | Op::Sample { .. } => sample::launches(desc, &ptrs, wave),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parity::cases;

    /// Every parity case plans to at least one launch of an entry its module's source defines,
    /// with every T_* it substitutes used by that source.
    #[test]
    fn every_case_plans_a_known_kernel() {
        for c in cases::all() {
            let desc = c.desc();
            if !supports(&desc).is_yes() {
                continue;
            }
            let n_in = desc.inputs.len();
            let n_out = desc.outputs.len();
            let ls = launches(&desc, &vec![0x1000; n_in], &vec![0x2000; n_out], 32);
            assert!(!ls.is_empty(), "{}", c.id);
            for l in ls {
                let src = super::super::source::file(l.module.file)
                    .unwrap_or_else(|| panic!("{}: no hip/{}", c.id, l.module.file));
                assert!(
                    src.contains(&format!("WG_KERNEL void {}(", l.entry)),
                    "{}: {} has no kernel {}",
                    c.id,
                    l.module.file,
                    l.entry
                );
                for (k, _) in &l.module.defines {
                    assert!(
                        src.contains(&format!("#ifndef {k}")),
                        "{}: {} does not take {k}",
                        c.id,
                        l.module.file
                    );
                }
                assert!(l.grid.0 > 0 && l.grid.1 > 0, "{}: empty grid", c.id);
            }
        }
    }
}
