//! The gated delta rule: shaders/gdn.wgsl (shared helpers) prepended to
//!   gdn_recurrent_tile.wgsl  the recurrent body over one sequence's tokens for one (value head,
//!                         column tile), prepended to the two recurrent entries:
//!   gdn_recurrent.wgsl    gdn_recurrent: token by token, one workgroup per (value head, column tile)
//!   gdn_batch.wgsl        gdn_batch: the same per (sequence, value head, column tile), each
//!                         sequence's state read from and written back to its slot of the pool
//!   gdn_chunk_prep.wgsl   gdn_chunked pass 1: per (chunk, value head), the state-free intra-chunk
//!                         matrices (Tinv = (I + A)^-1, QKD, cumulative gates) into a scratch buffer
//!   gdn_chunk_scan.wgsl   gdn_chunked pass 2: per (value head, column tile), the chunks in order
//!   gdn_chunk_slot.wgsl   the scan's head for gdn_batch's lone prefill (`lone_chunked`): the
//!                         state is the pool's one slot, in place
//! Key head dim DK is a compile-time constant (in the variant). Everything runs on the device: there
//! is no host path.
use super::kernel::{grid, read, write, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{gdn_dims, Op, OpDesc, GDN_CHUNK};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Workgroup size of all three kernels (and gdn_conv_norm's).
pub(super) const NT: usize = 256;
/// Value columns per workgroup: recurrent (gdn_conv_norm's too), chunk scan.
pub(super) const TJ_REC: usize = 32;
const TJ_SCAN: usize = 16;
/// dk slice staged per step in the chunk prep (C * C == 2 * C * DS: the staging reuses A's memory).
const DS: usize = GDN_CHUNK / 2;
/// f32 words per (chunk, value head) block of the prep scratch.
const PB: usize = 2 * GDN_CHUNK * GDN_CHUNK + 4 * GDN_CHUNK;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct Params {
    offs: [u32; 8],
    pub(super) t: u32,
    pub(super) nk: u32,
    pub(super) nv: u32,
    pub(super) dk: u32,
    pub(super) dv: u32,
    pub(super) c: u32,
    pub(super) group: u32,
    /// ntiles (recurrent) or nchunks (prep, scan)
    pub(super) n: u32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

/// gdn_batch's Params: the recurrent one's with room for 16 offsets (gdn_conv_norm binds 14),
/// plus the sequence and slot counts, and gdn_conv_norm's norm epsilon.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct BatchParams {
    offs: [u32; 16],
    /// Params from t on (ntiles in n)
    dims: [u32; 8],
    s: u32,
    slots: u32,
    eps: f32,
    pad: u32,
}
const _: () = assert!(std::mem::size_of::<BatchParams>() == 112);

impl BatchParams {
    pub(super) fn new(p: &Params, s: usize, slots: usize, eps: f32) -> BatchParams {
        BatchParams {
            offs: [0; 16],
            dims: [p.t, p.nk, p.nv, p.dk, p.dv, p.c, p.group, p.n],
            s: s as u32,
            slots: slots as u32,
            eps,
            pad: 0,
        }
    }
}

/// The scan's Params: the prep's plus ntiles.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ScanParams {
    base: Params,
    ntiles: u32,
    pad: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<ScanParams>() == 80);

pub(super) fn rec_smem(dk: usize) -> usize {
    4 * (2 * dk + 2 * NT + 2 * NT)
}
fn prep_smem() -> usize {
    4 * (GDN_CHUNK * GDN_CHUNK + 4 * GDN_CHUNK)
}
fn scan_smem(dk: usize) -> usize {
    4 * (dk * TJ_SCAN + 2 * GDN_CHUNK * TJ_SCAN + 4 * GDN_CHUNK)
}

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let state = match desc.op {
        Op::GdnBatch => &desc.outputs[1].shape[1..],
        _ => &desc.inputs[5].shape[..],
    };
    let Ok((t, _, nv, dk, _)) = gdn_dims(&desc.inputs[0].shape, state) else {
        return Support::No("bad gated-delta-rule shapes".into());
    };
    let smem = b.caps.max_workgroup_storage as usize;
    if NT > b.caps.max_invocations as usize {
        return Support::No(format!(
            "needs {NT} invocations per workgroup, device has {}",
            b.caps.max_invocations
        ));
    }
    if desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .any(|x| x.numel() as u64 >= u32::MAX as u64)
    {
        return Support::No("an operand exceeds u32 indexing".into());
    }
    match desc.op {
        Op::GdnRecurrent | Op::GdnBatch => {
            if rec_smem(dk) > smem {
                return Support::No(format!(
                    "key head dim {dk} needs {} B workgroup memory, device has {smem}",
                    rec_smem(dk)
                ));
            }
        }
        _ => return chunks_fit(b, t, nv, dk),
    }
    Support::Yes
}

/// Whether the chunk kernels' workgroup memory and prep scratch for `t` tokens fit the device.
fn chunks_fit(b: &WgpuBackend, t: usize, nv: usize, dk: usize) -> Support {
    let smem = b.caps.max_workgroup_storage as usize;
    for (what, need) in [("chunk prep", prep_smem()), ("chunk scan", scan_smem(dk))] {
        if need > smem {
            return Support::No(format!(
                "{what} with key head dim {dk} needs {need} B workgroup memory, device has {smem}"
            ));
        }
    }
    let scratch = (t.div_ceil(GDN_CHUNK) * nv * PB * 4) as u64;
    if scratch > b.caps.max_binding {
        return Support::No(format!(
            "{t} tokens need a {scratch} B chunk scratch, over max_storage_buffer_binding_size {}",
            b.caps.max_binding
        ));
    }
    Support::Yes
}

/// The Params of qkv [T, C] (`i[0]`) over heads of `state` [nv, dk, dv] (n unset), and the
/// bindings of qkv and the gate inputs: the first bindings of every kernel here (the chunk prep's
/// too) and of gdn_conv_norm's.
pub(super) fn params(op: &Op, i: &[&Tensor], state: &[usize]) -> Result<(Params, Vec<super::kernel::Binding>)> {
    let (t, nk, nv, dk, dv) = gdn_dims(&i[0].shape, state).map_err(|e| Error::shape(op.name(), e))?;
    let p = Params {
        offs: [0; 8],
        t: t as u32,
        nk: nk as u32,
        nv: nv as u32,
        dk: dk as u32,
        dv: dv as u32,
        c: i[0].shape[1] as u32,
        group: (nv / nk) as u32,
        n: 0,
    };
    let names = ["qkv", "b", "a", "a_log", "dt_bias"];
    Ok((p, names.iter().zip(i).map(|(n, x)| read(n, x.dtype)).collect()))
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let state = match op {
        Op::GdnBatch => &o[1].shape[1..],
        _ => &i[5].shape[..],
    };
    let (mut p, mut bindings) = params(op, i, state)?;
    let (t, nv, dk, dv) = (p.t as usize, p.nv as usize, p.dk as usize, p.dv as usize);
    if t == 0 {
        return Ok(());
    }
    match op {
        Op::GdnRecurrent => {
            let ntiles = dv.div_ceil(TJ_REC);
            p.n = ntiles as u32;
            bindings.extend([
                read("state", DType::F32),
                write("o", o[0].dtype),
                write("state_out", DType::F32),
            ]);
            let key = KernelKey {
                entry: "gdn_recurrent",
                bindings,
                variant: format!("dk{dk}"),
            };
            let consts = rec_consts(dk);
            let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], o[0], o[1]];
            launch(
                b,
                &key,
                &recurrent_src(b, "gdn_recurrent.wgsl"),
                &consts,
                bytemuck::bytes_of(&p),
                &tensors,
                nv * ntiles,
            )
        }
        Op::GdnChunked => chunked(
            b,
            p,
            dk,
            bindings,
            [i[0], i[1], i[2], i[3], i[4]],
            Scan::Tensors {
                state: i[5],
                o: o[0],
                state_out: o[1],
            },
        ),
        Op::GdnBatch if lone_chunked(b, i, o, t, dk) => chunked(
            b,
            p,
            dk,
            bindings,
            [i[0], i[1], i[2], i[3], i[4]],
            Scan::Slot {
                seqs: i[5],
                o: o[0],
                pool: o[1],
            },
        ),
        Op::GdnBatch => {
            let ntiles = dv.div_ceil(TJ_REC);
            p.n = ntiles as u32;
            let (s, slots) = (i[5].shape[0], o[1].shape[0]);
            let bp = BatchParams::new(&p, s, slots, 0.0);
            bindings.extend([
                read("seqs", DType::U32),
                write("o", o[0].dtype),
                write("state", DType::F32),
            ]);
            let key = KernelKey {
                entry: "gdn_batch",
                bindings,
                variant: format!("dk{dk}"),
            };
            let consts = rec_consts(dk);
            let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], o[0], o[1]];
            launch(
                b,
                &key,
                &recurrent_src(b, "gdn_batch.wgsl"),
                &consts,
                bytemuck::bytes_of(&bp),
                &tensors,
                s * nv * ntiles,
            )
        }
        _ => unreachable!("gdn::record got {}", op.name()),
    }
}

/// Where gdn_chunk_scan keeps the state: gdn_chunked's state in and state out, or the one slot of
/// gdn_batch's pool, in place, for the lone sequence that `seqs` describes (gdn_chunk_slot.wgsl).
enum Scan<'a> {
    Tensors {
        state: &'a Tensor,
        o: &'a Tensor,
        state_out: &'a Tensor,
    },
    Slot {
        seqs: &'a Tensor,
        o: &'a Tensor,
        pool: &'a Tensor,
    },
}

/// gdn_batch on the chunked form: a lone sequence's prefill chunk (batch invariance off, one
/// sequence over a pool of one slot, more than one token), where the device holds the chunk
/// kernels' memory. Its bits then depend on how the prompt is chunked, which is what invariance
/// off allows; every other batch keeps the recurrent form, whose rows do not.
pub(super) fn lone_chunked(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor], t: usize, dk: usize) -> bool {
    b.invariance() == crate::backend::BatchInvariance::Off
        && i[5].shape[0] == 1
        && o[1].shape[0] == 1
        && t > 1
        && chunks_fit(b, t, o[1].shape[1], dk).is_yes()
}

/// gdn_chunked's two passes (gdn_chunk_prep, gdn_chunk_scan) over `inputs` (qkv, b, a, a_log,
/// dt_bias; `bindings` theirs), the state where `scan` keeps it.
fn chunked(
    b: &WgpuBackend,
    mut p: Params,
    dk: usize,
    mut bindings: Vec<super::kernel::Binding>,
    inputs: [&Tensor; 5],
    scan: Scan,
) -> Result<()> {
    let (t, nv, dv) = (p.t as usize, p.nv as usize, p.dv as usize);
    let nchunks = t.div_ceil(GDN_CHUNK);
    p.n = nchunks as u32;
    let pre = b.scratch("gdn_chunk_prep", DType::F32, nchunks * nv * PB)?;
    bindings.push(write("pre", DType::F32));
    let key = KernelKey {
        entry: "gdn_chunk_prep",
        bindings,
        variant: String::new(),
    };
    let consts = [
        ("C", format!("{GDN_CHUNK}u")),
        ("NT", format!("{NT}u")),
        ("DS", format!("{DS}u")),
    ];
    let [qkv, bt, at, a_log, dt_bias] = inputs;
    let tensors = [qkv, bt, at, a_log, dt_bias, &pre];
    let src = b.source("gdn_chunk_prep.wgsl");
    launch(b, &key, src, &consts, bytemuck::bytes_of(&p), &tensors, nchunks * nv)?;

    let ntiles = dv.div_ceil(TJ_SCAN);
    let sp = ScanParams {
        base: p,
        ntiles: ntiles as u32,
        pad: [0; 3],
    };
    let (head, bindings, tensors) = match scan {
        Scan::Tensors { state, o, state_out } => (
            SCAN_TENSORS.to_string(),
            vec![
                read("qkv", qkv.dtype),
                read("pre", DType::F32),
                read("state", DType::F32),
                write("o", o.dtype),
                write("state_out", DType::F32),
            ],
            [qkv, &pre, state, o, state_out],
        ),
        Scan::Slot { seqs, o, pool } => (
            b.source("gdn_chunk_slot.wgsl").to_string(),
            vec![
                read("qkv", qkv.dtype),
                read("pre", DType::F32),
                read("seqs", DType::U32),
                write("o", o.dtype),
                write("state", DType::F32),
            ],
            [qkv, &pre, seqs, o, pool],
        ),
    };
    let key = KernelKey {
        entry: "gdn_chunk_scan",
        bindings,
        variant: format!("dk{dk}"),
    };
    let consts = [
        ("C", format!("{GDN_CHUNK}u")),
        ("NT", format!("{NT}u")),
        ("TJ", format!("{TJ_SCAN}u")),
        ("DK", format!("{dk}u")),
    ];
    let src = format!("{head}\n{}", b.source("gdn_chunk_scan.wgsl"));
    launch(b, &key, &src, &consts, bytemuck::bytes_of(&sp), &tensors, nv * ntiles)
}

/// gdn_chunked's scan state: the op's state in and state out.
const SCAN_TENSORS: &str = "fn scan_seq_ok() -> bool { return true; }
fn scan_state_in(i: u32) -> f32 { return ld_state(i); }
fn scan_state_out(i: u32, v: f32) { st_state_out(i, v); }
";

/// The recurrent body's constants (gdn_recurrent_tile.wgsl) for key heads of `dk`: gdn_recurrent's,
/// gdn_batch's and gdn_conv_norm's.
pub(super) fn rec_consts(dk: usize) -> Vec<(&'static str, String)> {
    vec![
        ("DK", format!("{dk}u")),
        ("NT", format!("{NT}u")),
        ("TJ", format!("{TJ_REC}u")),
        ("RMAX", format!("{}u", dk.div_ceil(NT / TJ_REC))),
    ]
}

/// A recurrent entry (`file`) after the body they share, reading qkv and storing o as they are.
fn recurrent_src(b: &WgpuBackend, file: &str) -> String {
    ["gdn_recurrent_tile.wgsl", "gdn_tile_in.wgsl", "gdn_tile_out.wgsl", file]
        .map(|f| b.source(f))
        .join("\n")
}

/// One of the kernels: gdn.wgsl's helpers, then `src`; `groups` workgroups.
pub(super) fn launch(
    b: &WgpuBackend,
    key: &KernelKey,
    src: &str,
    consts: &[(&str, String)],
    params: &[u8],
    tensors: &[&Tensor],
    groups: usize,
) -> Result<()> {
    b.dispatch(
        key,
        || (format!("{}\n{src}", b.source("gdn.wgsl")), consts.to_vec()),
        params,
        tensors,
        grid(groups as u32),
    )
}
