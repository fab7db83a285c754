//! The native plan of the ops over quantized weights (GGUF block types read as stored, hip/quant.hip):
//! the linear (a matvec for small M, a GEMM above) and the embedding (and embedding_shard) over a
//! quantized table.
use super::{module, u, Launch, BLOCK};
use crate::backend::native::Arg;
use crate::backend::Support;
use crate::dtype::DType;
use crate::op::{Op, OpDesc};

/// Largest M the quantized matvec takes (QMV_MAX_M in hip/quant.hip): up to here one pass over
/// the weight blocks serves every row of x; larger M goes to the GEMM.
const QMATVEC_MAX_M: usize = 8;
/// qgemm's output tile (QGT).
const QGEMM_TILE: usize = 64;
/// Elements each qembedding thread writes.
const EMB_GROUP: usize = 8;

/// The three entries of `q` (matvec, gemm, embedding); None for a type with no kernel.
fn entries(q: DType) -> Option<[&'static str; 3]> {
    Some(match q {
        DType::Q8_0 => ["qmatvec_q8_0", "qgemm_q8_0", "qembedding_q8_0"],
        DType::Q4_0 => ["qmatvec_q4_0", "qgemm_q4_0", "qembedding_q4_0"],
        DType::Q4_1 => ["qmatvec_q4_1", "qgemm_q4_1", "qembedding_q4_1"],
        DType::Q4K => ["qmatvec_q4_k", "qgemm_q4_k", "qembedding_q4_k"],
        DType::Q6K => ["qmatvec_q6_k", "qgemm_q6_k", "qembedding_q6_k"],
        DType::IQ4NL => ["qmatvec_iq4_nl", "qgemm_iq4_nl", "qembedding_iq4_nl"],
        _ => return None,
    })
}

/// Whether the hip/ kernels run `desc` (an op over quantized blocks); the reason when not.
pub fn supports(desc: &OpDesc) -> Support {
    let i = &desc.inputs;
    let q = i
        .iter()
        .find(|t| t.dtype.is_quant())
        .map(|t| t.dtype)
        .expect("an op with a quantized input");
    if entries(q).is_none() {
        return Support::No(format!("no hip/quant.hip kernel for the block type {q}"));
    }
    match &desc.op {
        // OpDesc::check (run before) admits a quantized w only, with rows of whole blocks
        Op::Linear => {
            let m = i[0].shape[0];
            if m > QMATVEC_MAX_M && m.div_ceil(QGEMM_TILE) > 65535 {
                return Support::No(format!("M {m} needs more than 65535 qgemm tile rows"));
            }
            Support::Yes
        }
        Op::Embedding | Op::EmbeddingShard { .. } => {
            if let Op::EmbeddingShard { first } = desc.op {
                if first > u32::MAX as usize {
                    return Support::No(format!("shard first id {first}: qembedding takes 32-bit ids"));
                }
            }
            if i[0].shape[1].div_ceil(EMB_GROUP * BLOCK as usize) > 65535 {
                return Support::No("quantized embedding row wider than 65535 blocks".into());
            }
            Support::Yes
        }
        op => Support::No(format!("no hip/ kernel for {} over {q}", op.name())),
    }
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, ptrs: &[Arg], wave: u32) -> Vec<Launch> {
    let (i, o) = (&desc.inputs, &desc.outputs);
    let one = |module, entry, grid, scalars: &[Arg]| {
        vec![Launch {
            module,
            entry,
            grid,
            args: [ptrs, scalars].concat(),
        }]
    };
    match &desc.op {
        Op::Linear => {
            let [matvec, gemm, _] = entries(i[1].dtype).expect("supports checked the type");
            let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
            let args = &[Arg::U32(u(m)), Arg::U32(u(n)), Arg::U32(u(k))];
            let md = module("quant.hip", &[("T_X", i[0].dtype), ("T_Y", o[0].dtype)]);
            if m <= QMATVEC_MAX_M {
                // one wave per weight row
                let rows = (BLOCK / wave.max(1)).max(1) as usize;
                one(md, matvec, (u(n.div_ceil(rows)), 1), args)
            } else {
                one(md, gemm, (u(n.div_ceil(QGEMM_TILE)), u(m.div_ceil(QGEMM_TILE))), args)
            }
        }
        Op::Embedding | Op::EmbeddingShard { .. } => {
            let [_, _, emb] = entries(i[0].dtype).expect("supports checked the type");
            let (v, d, t) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
            // plain embedding: rows past the table are zeros; a shard leaves rows outside it alone
            let (first, shard) = match desc.op {
                Op::EmbeddingShard { first } => (first, 1),
                _ => (0, 0),
            };
            one(
                module("quant.hip", &[("T_OUT", o[0].dtype)]),
                emb,
                (u(t), u(d.div_ceil(EMB_GROUP * BLOCK as usize))),
                &[Arg::U32(u(v)), Arg::U32(u(d)), Arg::U32(u(first)), Arg::U32(shard)],
            )
        }
        _ => unreachable!("{} is refused by supports", desc.op.name()),
    }
}
