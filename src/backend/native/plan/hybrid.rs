//! The native plan of the Qwen3.5 ops: embedding_shard, the causal conv1d family, the Gated DeltaNet
//! family, rms_norm_gated, gated_attention, and the per-sequence state-slot variants.
use super::{module, stride_grid, u, Launch, BLOCK};
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::op::{Op, OpDesc};

/// gated_attention.hip's attention kernel keeps one query / output dim per thread.
const GATED_ATTENTION_MAX_DH: usize = BLOCK as usize;

/// Whether the hip/ kernels run `desc` (the Qwen3.5 ops); the reason when not.
pub fn supports(desc: &OpDesc) -> Support {
    match &desc.op {
        Op::EmbeddingShard { .. }
        | Op::CausalConv1d
        | Op::CausalConv1dUpdate
        | Op::CausalConv1dBatch
        | Op::RmsNormGated { .. }
        | Op::GatedAttention { .. } => conv_norm_attention_supports(desc),
        Op::GdnRecurrent | Op::GdnChunked | Op::GdnBatch => super::gdn::supports(desc),
        _ => Support::No(format!("no hip/ kernel for {} yet", desc.op.name())),
    }
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, ptrs: &[Arg], _wave: u32) -> Vec<Launch> {
    match &desc.op {
        Op::EmbeddingShard { .. }
        | Op::CausalConv1d
        | Op::CausalConv1dUpdate
        | Op::CausalConv1dBatch
        | Op::RmsNormGated { .. }
        | Op::GatedAttention { .. } => conv_norm_attention_launches(desc, ptrs),
        Op::GdnRecurrent | Op::GdnChunked | Op::GdnBatch => super::gdn::launches(desc, ptrs),
        _ => unreachable!("{} is refused by supports", desc.op.name()),
    }
}

// ---- embedding_shard, the causal conv1d family, rms_norm_gated, gated_attention ----

/// The limits of embedding_shard.hip, causal_conv1d{,_batch}.hip, rms_norm_gated.hip and
/// gated_attention.hip (shapes and dtypes are OpDesc::check's).
fn conv_norm_attention_supports(desc: &OpDesc) -> Support {
    let i = &desc.inputs;
    match &desc.op {
        Op::EmbeddingShard { first } => {
            if *first > u32::MAX as usize {
                return Support::No(format!("shard offset {first}: embedding_shard.hip takes a u32 id"));
            }
            if i[0].shape[1].div_ceil(BLOCK as usize) > 65535 {
                return Support::No("embedding row wider than 65535 blocks".into());
            }
            Support::Yes
        }
        Op::GatedAttention { .. } => {
            let dh = i[0].shape[2] / 2;
            if dh > GATED_ATTENTION_MAX_DH {
                return Support::No(format!(
                    "head_dim {dh} > {GATED_ATTENTION_MAX_DH}: hip/gated_attention.hip keeps one output dim per thread"
                ));
            }
            Support::Yes
        }
        _ => Support::Yes,
    }
}

fn conv_norm_attention_launches(desc: &OpDesc, ptrs: &[Arg]) -> Vec<Launch> {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let launch = |module, entry, grid, scalars: &[Arg]| Launch {
        module,
        entry,
        grid,
        args: [ptrs, scalars].concat(),
    };
    match &desc.op {
        Op::EmbeddingShard { first } => {
            let (vs, d, t) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
            vec![launch(
                module("embedding_shard.hip", &[("T_TABLE", i[0].dtype), ("T_OUT", o[0].dtype)]),
                "embedding_shard",
                (u(t), u(d.div_ceil(BLOCK as usize))),
                &[Arg::U32(u(vs)), Arg::U32(u(d)), Arg::U32(u(*first))],
            )]
        }
        // the update is the same kernel with T = 1
        Op::CausalConv1d | Op::CausalConv1dUpdate => {
            let (t, c, k) = (i[0].shape[0], i[0].shape[1], i[1].shape[1]);
            let n = (t + k - 1) * c;
            let (blocks, stride) = stride_grid(n);
            vec![launch(
                module(
                    "causal_conv1d.hip",
                    &[
                        ("T_X", i[0].dtype),
                        ("T_W", i[1].dtype),
                        ("T_S", i[2].dtype),
                        ("T_Y", o[0].dtype),
                        ("T_SO", o[1].dtype),
                    ],
                ),
                "causal_conv1d",
                (blocks, 1),
                &[
                    Arg::U32(u(t)),
                    Arg::U32(u(c)),
                    Arg::U32(u(k)),
                    Arg::U64(n as u64),
                    Arg::U64(stride),
                ],
            )]
        }
        // outputs first, then the states back into their slots (the second overwrites what the
        // first reads)
        Op::CausalConv1dBatch => {
            let (t, c, k) = (i[0].shape[0], i[0].shape[1], i[1].shape[1]);
            let (s, slots) = (i[2].shape[0], o[1].shape[0]);
            let m = module(
                "causal_conv1d_batch.hip",
                &[("T_X", i[0].dtype), ("T_W", i[1].dtype), ("T_Y", o[0].dtype)],
            );
            [("causal_conv1d_batch", t * c), ("causal_conv1d_batch_state", s * c)]
                .into_iter()
                .map(|(entry, n)| {
                    let (blocks, stride) = stride_grid(n);
                    launch(
                        m.clone(),
                        entry,
                        (blocks, 1),
                        &[
                            Arg::U32(u(t)),
                            Arg::U32(u(c)),
                            Arg::U32(u(k)),
                            Arg::U32(u(s)),
                            Arg::U32(u(slots)),
                            Arg::U64(n as u64),
                            Arg::U64(stride),
                        ],
                    )
                })
                .collect()
        }
        Op::RmsNormGated { eps } => {
            let d = i[2].shape[0];
            vec![launch(
                module(
                    "rms_norm_gated.hip",
                    &[
                        ("T_X", i[0].dtype),
                        ("T_Z", i[1].dtype),
                        ("T_W", i[2].dtype),
                        ("T_Y", o[0].dtype),
                    ],
                ),
                "rms_norm_gated",
                (u(i[0].numel() / d), 1),
                &[Arg::U32(u(d)), Arg::F32(*eps)],
            )]
        }
        Op::GatedAttention {
            n_past,
            scale,
            eps,
            rotary_dim,
        } => {
            let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2] / 2);
            let hkv = i[1].shape[1];
            // each operand its own dtype: the output's is o's (T_O), whatever qg's is
            let m = module(
                "gated_attention.hip",
                &[
                    ("T_Q", i[0].dtype),
                    ("T_K", i[1].dtype),
                    ("T_V", i[2].dtype),
                    ("T_QN", i[3].dtype),
                    ("T_KN", i[4].dtype),
                    ("T_O", o[0].dtype),
                    ("T_KC", o[1].dtype),
                    ("T_VC", o[2].dtype),
                ],
            );
            let (half, np) = (Arg::U32(u(rotary_dim / 2)), Arg::U32(u(*n_past)));
            vec![
                // the new keys and values into the caches first: the attention reads them there
                launch(
                    m.clone(),
                    "gated_attention_kv",
                    (u(t * hkv), 1),
                    &[Arg::U32(u(hkv)), Arg::U32(u(dh)), half, np, Arg::F32(*eps)],
                ),
                launch(
                    m,
                    "gated_attention",
                    (u(t * hq), 1),
                    &[
                        Arg::U32(u(hq)),
                        Arg::U32(u(hkv)),
                        Arg::U32(u(dh)),
                        half,
                        np,
                        Arg::F32(*scale),
                        Arg::F32(*eps),
                    ],
                ),
            ]
        }
        _ => unreachable!("{} is not a conv / norm / attention op", desc.op.name()),
    }
}
