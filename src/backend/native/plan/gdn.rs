//! The native plan of the Gated DeltaNet ops (called from hybrid.rs):
//!   gdn_recurrent  hip/gdn.hip gdn_recurrent: one block per (value head, tile of 32 value columns)
//!   gdn_batch      hip/gdn.hip gdn_batch: the same body per sequence (grid.y), state in its slot
//!   gdn_chunked    hip/gdn_chunked.hip: one block per (value head, tile of 16 value columns),
//!                  chunks of `GDN_CHUNK` tokens in order, the state tile in shared memory
//! Operand dtypes are substituted per operand: T_X qkv, T_B b, T_A a, T_W a_log, T_WB dt_bias, T_O o.
use super::{module, u, Launch, ModuleKey};
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::op::{gdn_dims, Op, OpDesc, GDN_CHUNK};

/// The kernels' largest key head dim (GDN_DK_MAX in both files): gdn.hip keeps a lane's rows of a
/// state column in registers, gdn_chunked.hip the state tile [dk, 16] in 48 KiB of shared memory.
const DK_MAX: usize = 128;
/// Value columns per block: gdn.hip (GR_TJ), gdn_chunked.hip (GC_TJ).
const TJ_REC: usize = 32;
const TJ_CHUNK: usize = 16;
/// gdn_chunked.hip's chunk (GC_C): the op's chunk, whose boundaries the results depend on.
const _: () = assert!(GDN_CHUNK == 64);

/// (T, nk, nv, dk, dv) of `desc` (already contract-checked).
fn dims(desc: &OpDesc) -> (usize, usize, usize, usize, usize) {
    let state = match desc.op {
        Op::GdnBatch => &desc.outputs[1].shape[1..],
        _ => &desc.inputs[5].shape[..],
    };
    gdn_dims(&desc.inputs[0].shape, state).expect("OpDesc::check passed")
}

pub fn supports(desc: &OpDesc) -> Support {
    let (_, _, nv, dk, dv) = dims(desc);
    if dk > DK_MAX {
        let why = match desc.op {
            Op::GdnChunked => "hip/gdn_chunked.hip keeps the state tile [dk, 16] in shared memory",
            _ => "hip/gdn.hip keeps a state column's rows in registers",
        };
        return Support::No(format!("key head dim {dk} > {DK_MAX}: {why}"));
    }
    let tj = if desc.op == Op::GdnChunked { TJ_CHUNK } else { TJ_REC };
    if nv * dv.div_ceil(tj) > i32::MAX as usize {
        return Support::No(format!("{nv} value heads x {dv} columns: too many blocks"));
    }
    if desc.op == Op::GdnBatch && desc.inputs[5].shape[0] > 65535 {
        return Support::No(format!(
            "{} sequences: gdn_batch puts them on grid.y (at most 65535)",
            desc.inputs[5].shape[0]
        ));
    }
    Support::Yes
}

fn gdn_module(file: &'static str, desc: &OpDesc) -> ModuleKey {
    let (i, o) = (&desc.inputs, &desc.outputs);
    module(
        file,
        &[
            ("T_X", i[0].dtype),
            ("T_B", i[1].dtype),
            ("T_A", i[2].dtype),
            ("T_W", i[3].dtype),
            ("T_WB", i[4].dtype),
            ("T_O", o[0].dtype),
        ],
    )
}

pub fn launches(desc: &OpDesc, ptrs: &[Arg]) -> Vec<Launch> {
    let (t, nk, nv, dk, dv) = dims(desc);
    let launch = |module, entry, grid, scalars: &[Arg]| Launch {
        module,
        entry,
        grid,
        args: [ptrs, scalars].concat(),
    };
    let shape = |ntiles: usize| [nk, nv, dk, dv, ntiles].map(|x| Arg::U32(u(x)));
    match desc.op {
        Op::GdnRecurrent => {
            let nt = dv.div_ceil(TJ_REC);
            vec![launch(
                gdn_module("gdn.hip", desc),
                "gdn_recurrent",
                (u(nv * nt), 1),
                &[&[Arg::U32(u(t))], &shape(nt)[..]].concat(),
            )]
        }
        Op::GdnBatch => {
            let nt = dv.div_ceil(TJ_REC);
            let (s, slots) = (desc.inputs[5].shape[0], desc.outputs[1].shape[0]);
            vec![launch(
                gdn_module("gdn.hip", desc),
                "gdn_batch",
                (u(nv * nt), u(s)),
                &[&[Arg::U32(u(t)), Arg::U32(u(slots))], &shape(nt)[..]].concat(),
            )]
        }
        Op::GdnChunked => {
            let nt = dv.div_ceil(TJ_CHUNK);
            vec![launch(
                gdn_module("gdn_chunked.hip", desc),
                "gdn_chunked",
                (u(nv * nt), 1),
                &[&[Arg::U32(u(t))], &shape(nt)[..]].concat(),
            )]
        }
        _ => unreachable!("plan::gdn plans the gated delta rule ops only"),
    }
}
