//! The native plan of the paged KV cache ops: kv_write (hip/kv_write.hip), paged_attention and
//! paged_gated_attention (hip/paged_attention.hip: one block per (query row, query head), so a
//! row's bits do not depend on the rest of the batch, as paged_attention.wgsl).
use super::{module, stride_grid, u, Launch, BLOCK};
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::op::{Op, OpDesc};

/// paged_attention.hip stages one query in a block-sized array (one dim per thread at the end).
const MAX_DH: usize = BLOCK as usize;

/// Whether the hip/ kernels run `desc` (the paged KV ops); the reason when not.
pub fn supports(desc: &OpDesc) -> Support {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let pool = match desc.op {
        Op::KvWrite => return Support::Yes,
        Op::PagedAttention { .. } => &i[1],
        _ => &o[1],
    };
    let dh = pool.shape[3];
    if dh > MAX_DH {
        return Support::No(format!(
            "head_dim {dh} > {MAX_DH}: hip/paged_attention.hip keeps one query dim per thread"
        ));
    }
    Support::Yes
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, ptrs: &[Arg], _wave: u32) -> Vec<Launch> {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let with = |scalars: &[Arg]| [ptrs, scalars].concat();
    match desc.op {
        Op::KvWrite => {
            let p = &o[0].shape;
            let row = p[2] * p[3];
            let n = i[0].numel();
            let (blocks, stride) = stride_grid(n);
            vec![Launch {
                module: module(
                    "kv_write.hip",
                    &[("T_K", i[0].dtype), ("T_V", i[1].dtype), ("T_KV", o[0].dtype)],
                ),
                entry: "kv_write",
                grid: (blocks, 1),
                args: with(&[
                    Arg::U64(n as u64),
                    Arg::U64(stride),
                    Arg::U32(u(row)),
                    Arg::U32(u(p[0] * p[1])),
                ]),
            }]
        }
        Op::PagedAttention { scale, .. } => {
            let (t, hq) = (i[0].shape[0], i[0].shape[1]);
            let p = &i[1].shape;
            let (ns, mb) = (i[3].shape[0], i[3].shape[1]);
            vec![Launch {
                module: module(
                    "paged_attention.hip",
                    &[("T_Q", i[0].dtype), ("T_KV", i[1].dtype), ("T_O", o[0].dtype)],
                ),
                entry: "paged_attention",
                grid: (u(t * hq), 1),
                args: with(&[
                    Arg::U32(u(hq)),
                    Arg::U32(u(p[2])),
                    Arg::U32(u(p[3])),
                    Arg::U32(u(p[1])),
                    Arg::U32(u(p[0])),
                    Arg::U32(u(mb)),
                    Arg::U32(u(ns)),
                    Arg::F32(scale),
                ]),
            }]
        }
        Op::PagedGatedAttention {
            scale, eps, rotary_dim, ..
        } => {
            let (t, hq) = (i[0].shape[0], i[0].shape[1]);
            let p = &o[1].shape;
            let (ns, mb) = (i[7].shape[0], i[7].shape[1]);
            let m = module(
                "paged_attention.hip",
                &[
                    ("T_Q", i[0].dtype),
                    ("T_K", i[1].dtype),
                    ("T_V", i[2].dtype),
                    ("T_QN", i[3].dtype),
                    ("T_KN", i[4].dtype),
                    ("T_O", o[0].dtype),
                    ("T_KV", o[1].dtype),
                ],
            );
            let args = with(&[
                Arg::U32(u(hq)),
                Arg::U32(u(p[2])),
                Arg::U32(u(p[3])),
                Arg::U32(u(p[1])),
                Arg::U32(u(p[0])),
                Arg::U32(u(mb)),
                Arg::U32(u(ns)),
                Arg::U32(u(rotary_dim / 2)),
                Arg::F32(scale),
                Arg::F32(eps),
            ]);
            // the new keys and values first: the attention launch reads them from the pools
            vec![
                Launch {
                    module: m.clone(),
                    entry: "paged_gated_attention_kv",
                    grid: (u(t * p[2]), 1),
                    args: args.clone(),
                },
                Launch {
                    module: m,
                    entry: "paged_gated_attention",
                    grid: (u(t * hq), 1),
                    args,
                },
            ]
        }
        _ => unreachable!("paged::launches is called for the paged ops"),
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use crate::backend::native::emu::EmuRuntime;
    use crate::dtype::DType;
    use crate::parity::paged_invariance;

    /// src/parity/paged_invariance.rs's property (one sequence's rows give the same bits in every
    /// batch composition and chunking, and agree with the CPU reference) through the host-emulated
    /// hip/ kernels: the kernels' batch invariance is a property of their code, so the emulator
    /// checks it where no GPU is (tests/ops.rs runs the same check on the real devices).
    #[test]
    #[ignore = "slow (thousands of emulated blocks)"]
    fn paged_invariance_holds_in_the_emulated_kernels() {
        let dev = EmuRuntime::new().expect("no clang++ for the host emulation").backend();
        for (gated, kv) in [
            (false, DType::F32),
            (false, DType::F16),
            (true, DType::F32),
            (true, DType::BF16),
        ] {
            let t0 = std::time::Instant::now();
            match paged_invariance::check(&dev, kv, gated) {
                Ok(m) => eprintln!("gated {gated}, kv {kv}: {m} ({:.1}s)", t0.elapsed().as_secs_f64()),
                Err(m) => panic!("gated {gated}, kv {kv}: {m}"),
            }
        }
    }
}
