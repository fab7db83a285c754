//! The native plan of the sampling ops: penalties, min_p, sample (hip/penalties.hip, min_p.hip,
//! sample.hip). Their operands are f32 and u32 only (the contracts fix them), so the modules take no
//! dtype substitutions.
use super::{stride_grid, u, Launch};
use crate::backend::native::{Arg, ModuleKey};
use crate::backend::Support;
use crate::op::{Op, OpDesc};

/// Every shape the contracts admit runs: penalties is a grid-stride loop, min_p and sample put one
/// block on each row (grid.x, up to 2^31 - 1 rows), and sample's alternatives (at most
/// MAX_TOP_LOGPROBS, hip/sample.hip's SAMPLE_MAX_K) fit its shared buffer.
pub fn supports(desc: &OpDesc) -> Support {
    let rows = desc.inputs[0].shape[0];
    if rows > i32::MAX as usize {
        return Support::No(format!("{rows} rows: one block per row, grid.x is below 2^31"));
    }
    Support::Yes
}

fn file(file: &'static str) -> ModuleKey {
    ModuleKey { file, defines: vec![] }
}

/// The launches of `desc` (already `supports`-checked): `ptrs` are the operands' addresses
/// (inputs, then outputs), which every kernel takes first.
pub fn launches(desc: &OpDesc, ptrs: &[Arg], _wave: u32) -> Vec<Launch> {
    let (r, v) = (desc.inputs[0].shape[0], desc.inputs[0].shape[1]);
    let launch = |module, entry, grid, scalars: &[Arg]| Launch {
        module,
        entry,
        grid,
        args: [ptrs, scalars].concat(),
    };
    let l = match &desc.op {
        Op::Penalties => {
            let n = r * v;
            let (blocks, stride) = stride_grid(n);
            launch(
                file("penalties.hip"),
                "penalties",
                (blocks, 1),
                &[Arg::U64(n as u64), Arg::U64(stride), Arg::U32(u(v))],
            )
        }
        Op::MinP => launch(file("min_p.hip"), "min_p", (u(r), 1), &[Arg::U32(u(v))]),
        Op::Sample { k } => launch(
            file("sample.hip"),
            "sample",
            (u(r), 1),
            &[Arg::U32(u(v)), Arg::U32(u(*k))],
        ),
        op => unreachable!("{} is not a sampling op", op.name()),
    };
    vec![l]
}
