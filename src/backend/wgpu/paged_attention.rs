//! paged_attention and paged_gated_attention: shaders/paged_attention.wgsl (Params, the block
//! table addressing, the batch-invariance argument) + a key loop + the kernel.
//! paged_attention: a row's keys split over workgroups ("flash decoding"), so that a step of few
//! sequences still has enough workgroups to fill a GPU:
//!   paged_attention_loop.wgsl + paged_attention_rows.wgsl: one workgroup per (query row, kv
//!   head, key partition of PARTITION keys) for all G = Hq / Hkv query heads of it, so a GQA
//!   group's K / V rows are read once (and coalesced: a team of lanes shares a key row); G is a
//!   compile-time constant of the kernel (its variant), at most MAX_GROUP. A row of one
//!   partition writes its output there; a longer one writes each partition's output sum, max and
//!   denominator to a scratch, and the last of its workgroups adds them in partition order
//!   (through atomic words and a counter a row and kv head: one dispatch, no combine pass).
//!   The grid has ceil(MB * BS / PARTITION) partitions a row (the engine keeps MB to the blocks
//!   the step uses); the scratch holds the records of as many rows as `Tuning::paged_scratch`
//!   allows, the rows beyond going in further dispatches.
//!   A lone sequence's decode step under batch invariance off takes paged_attention_lone.rs
//!   instead: one dispatch, its partitions combined by their last workgroup.
//! paged_gated_attention: paged_decode_attend.wgsl + attention_decode_loop.wgsl (decode_attend,
//! one workgroup per (query row, query head)), two dispatches: paged_gated_attention_kv.wgsl (new
//! k / v into the pools, a workgroup per token and kv head) then paged_gated_attention.wgsl.
//! On wgpu it runs paged_attention's kernels between its own instead (paged_gated_split.rs),
//! except for a lone decode step under batch invariance off, which takes paged_attention_lone.rs's
//! kernel with the gated prologue (one dispatch), and shapes the split does not take (a group of
//! more than MAX_GROUP heads), which take the two dispatches above.
//! Every query row is its own workgroups, decode and prefill alike, and its key partitions are
//! fixed by its own kv length: that is what makes a row's bits independent of the batch. (A
//! prefill tile that shares key reads between rows under the same per-row order is the speed
//! issue's to add.) With batch invariance off, a batch of one sequence's prefill chunk takes the
//! single-stream prefill tile instead (paged_attention_prefill.rs).
use super::attention::{decode_smem, ld4, ld4_with, DECODE_NT};
use super::kernel::{atomic, grid, read, write, Binding, KernelKey};
use super::{paged_attention_lone, paged_attention_prefill, paged_gated_split};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Workgroup size of the gated op's k / v dispatch (one workgroup per token and kv head).
const KV_WG: u32 = 64;
/// Storage buffers the gated op's dispatches bind (each of the two).
const GATED_BINDINGS: usize = 9;
/// paged_attention: query heads a workgroup attends together (Hq / Hkv), at most (registers: G
/// vec4 accumulators a thread; workgroup memory grows with G).
pub const MAX_GROUP: usize = 8;
/// paged_attention's chunk of keys (CK in paged_attention_loop.wgsl): a multiple of 16 and of
/// DECODE_NT / 4. Fixed: a row's reduction order depends on it.
const CHUNK: usize = 64;
/// paged_attention's key partition (PK in paged_attention_rows.wgsl): a row's keys
/// p * PARTITION .. (p + 1) * PARTITION are one workgroup's, combined in order p. A multiple of
/// CHUNK (here one chunk). Fixed, never chosen per batch: a row's reduction order depends on it.
const PARTITION: usize = 64;
const _: () = assert!(PARTITION % CHUNK == 0);
/// Storage buffers paged_attention binds.
const PARTS_BINDINGS: usize = 8;

/// paged_attention_loop.wgsl's PART and HR for head_dim `dh` and group `g`.
fn part_hr(dh: usize, g: usize) -> (usize, usize) {
    let part = (g * CHUNK).max(DECODE_NT);
    (part, (part / DECODE_NT).min(DECODE_NT / (dh / 4)))
}

/// paged_pool.wgsl's block size constant for pools of `bs` rows a block: every kernel with
/// pool_row takes it, and its variant names `bs` (the pipeline holds the constant).
pub(super) fn pool_bs(bs: u32) -> (&'static str, String) {
    ("PBS", format!("{bs}u"))
}

/// paged_attention's partitions a row in the grid: enough for the longest block-table row.
fn partitions(mb: usize, bs: usize) -> usize {
    (mb * bs).div_ceil(PARTITION).max(1)
}

/// f32 words of one query row's partition records (paged_attention_rows.wgsl: Hq heads x `np`
/// partitions x (Dh + 4)); 0 when the combine is not needed.
fn row_words(hq: usize, dh: usize, np: usize) -> usize {
    if np == 1 {
        0
    } else {
        hq * np * (dh + 4)
    }
}

/// Workgroup memory of paged_attention_loop.wgsl (+ paged_attention.wgsl's row_w) in bytes.
fn paged_smem(dh: usize, g: usize) -> usize {
    let (part, _) = part_hr(dh, g);
    // q_s, part_s, sc_s, prow_s, seg_s, m_s + al_s, row_w
    16 * g * (dh / 4) + 16 * part + 4 * g * CHUNK + 4 * CHUNK + 4 * g * (CHUNK / 16) + 8 * g + 16
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub(super) struct Params {
    offs: [u32; 16],
    pub(super) t: u32,
    pub(super) hq: u32,
    pub(super) hkv: u32,
    pub(super) dh: u32,
    group: u32,
    scale: f32,
    pub(super) bs: u32,
    nb: u32,
    pub(super) mb: u32,
    pub(super) s: u32,
    half: u32,
    eps: f32,
    pub(super) t0: u32,
    pub(super) np: u32,
    /// keys a partition where the kernel takes it at run time (paged_attention_lone.wgsl)
    pub(super) pk: u32,
    /// cos / sin rows and the q/k norm weight's row stride (paged_attention_lone_rope.wgsl)
    pub(super) max_pos: u32,
    pub(super) wstride: u32,
    pad: [u32; 3],
}
const _: () = assert!(std::mem::size_of::<Params>() == 144);

impl Params {
    /// A batch of `t` query rows of `hq` heads over `pool` [NB, BS, Hkv, Dh] through the block
    /// tables `bt` [S, MB]; eps and half for the kernels that norm and rotate.
    pub(super) fn new(t: usize, hq: usize, pool: &Tensor, bt: &Tensor, scale: f32, eps: f32, half: usize) -> Params {
        let (nb, bs, hkv, dh) = (pool.shape[0], pool.shape[1], pool.shape[2], pool.shape[3]);
        Params {
            offs: [0; 16],
            t: t as u32,
            hq: hq as u32,
            hkv: hkv as u32,
            dh: dh as u32,
            group: (hq / hkv) as u32,
            scale,
            bs: bs as u32,
            nb: nb as u32,
            mb: bt.shape[1] as u32,
            s: bt.shape[0] as u32,
            half: half as u32,
            eps,
            t0: 0,
            np: 0,
            pk: 0,
            max_pos: 0,
            wstride: 0,
            pad: [0; 3],
        }
    }
}

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let gated = matches!(desc.op, Op::PagedGatedAttention { .. });
    let pool = &desc.inputs[1].shape;
    let pool = if gated { &desc.outputs[1].shape } else { pool };
    let dh = pool[3];
    if !gated {
        let (hq, hkv) = (desc.inputs[0].shape[1], pool[2]);
        if hkv == 0 || hq % hkv != 0 || hq / hkv > MAX_GROUP {
            return Support::No(format!(
                "{hq} query heads over {hkv} kv heads: paged_attention attends a group of at most \
                 {MAX_GROUP} query heads a workgroup"
            ));
        }
        if dh % 16 != 0 {
            return Support::No(format!(
                "head_dim {dh} must be a multiple of 16 (paged_attention: four lanes of vec4s a key)"
            ));
        }
        // the scratch holds at least one row's partition records
        let (mb, bs) = (desc.inputs[3].shape[1], pool[1]);
        let np = partitions(mb, bs);
        let bytes = 4 * row_words(hq, dh, np) as u64;
        if bytes > b.caps.max_binding {
            return Support::No(format!(
                "block tables of {mb} blocks of {bs} keys make {np} key partitions a query row, \
                 whose records ({bytes} B) exceed max_storage_buffer_binding_size {}",
                b.caps.max_binding
            ));
        }
        if (b.caps.max_storage_buffers as usize) < PARTS_BINDINGS {
            return Support::No(format!(
                "binds {PARTS_BINDINGS} storage buffers, the device allows {} per stage",
                b.caps.max_storage_buffers
            ));
        }
    }
    if dh % 4 != 0 || dh / 4 > DECODE_NT {
        return Support::No(format!(
            "head_dim {dh} must be a multiple of 4 and at most {} (vec4 key loop)",
            4 * DECODE_NT
        ));
    }
    let words = desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .map(|d| d.numel())
        .max()
        .unwrap_or(0);
    if words as u64 >= u32::MAX as u64 {
        return Support::No(format!("{words} elements overflow the kernels' u32 indexing"));
    }
    let smem = match gated {
        true => decode_smem(dh) + 16,
        false => paged_smem(dh, desc.inputs[0].shape[1] / pool[2]),
    };
    if smem > b.caps.max_workgroup_storage as usize || DECODE_NT > b.caps.max_invocations as usize {
        return Support::No(format!(
            "head_dim {dh} needs {smem} B workgroup memory and {DECODE_NT} invocations"
        ));
    }
    if gated && (b.caps.max_storage_buffers as usize) < GATED_BINDINGS {
        return Support::No(format!(
            "binds {GATED_BINDINGS} storage buffers, the device allows {} per stage",
            b.caps.max_storage_buffers
        ));
    }
    Support::Yes
}

/// `fn ld4_{name}` over the per-element accessor (for a pool bound for writing, where the
/// kernel only needs the name to exist).
fn ld4_elems(name: &str) -> String {
    format!("fn ld4_{name}(i: u32) -> vec4<f32> {{ return vec4<f32>(ld_{name}(i), ld_{name}(i + 1u), ld_{name}(i + 2u), ld_{name}(i + 3u)); }}\n")
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (scale, eps, half, gated) = match *op {
        Op::PagedAttention { scale, .. } => (scale, 0.0, 0, false),
        Op::PagedGatedAttention {
            scale, eps, rotary_dim, ..
        } => (scale, eps, rotary_dim / 2, true),
        _ => unreachable!("paged_attention::record got {}", op.name()),
    };
    let (pool, bt) = if gated { (o[1], i[7]) } else { (i[1], i[3]) };
    let (t, hq) = (i[0].shape[0], i[0].shape[1]);
    let (hkv, dh) = (pool.shape[2], pool.shape[3]);
    let p = Params::new(t, hq, pool, bt, scale, eps, half);
    let consts = vec![
        ("DH4", format!("{}u", dh / 4)),
        ("NT", format!("{DECODE_NT}u")),
        pool_bs(p.bs),
    ];
    if !gated {
        if paged_attention_prefill::takes(b, i[0], bt) && paged_attention_prefill::record(b, op, i, o[0])? {
            return Ok(());
        }
        return record_parts(b, p, consts, i, o[0]);
    }
    if paged_attention_lone::takes_gated(b, &p, 2 * half, o) {
        return paged_attention_lone::record_gated(b, p, i, o);
    }
    let split = paged_gated_split::takes(b, op, i, o);
    let params = bytemuck::bytes_of(&p);
    let u = DType::U32;
    let variant = format!("dh{dh}bs{}", p.bs);
    let head = || {
        [
            b.source("paged_attention.wgsl"),
            b.source("paged_pool.wgsl"),
            b.source("paged_decode_attend.wgsl"),
            b.source("attention_decode_loop.wgsl"),
        ]
        .concat()
    };
    let rows = grid((t * hq) as u32);
    // 1. the new tokens' k and v into the pools
    let kv_bindings: Vec<Binding> = vec![
        read("k", i[1].dtype),
        read("v", i[2].dtype),
        read("kn", i[4].dtype),
        read("cos", DType::F32),
        read("sin", DType::F32),
        read("bt", u),
        read("seqs", u),
        write("kp", o[1].dtype),
        write("vp", o[2].dtype),
    ];
    let key = KernelKey {
        entry: "paged_gated_attention_kv",
        bindings: kv_bindings,
        variant: variant.clone(),
    };
    let kv_source = || {
        let body = [
            ld4_elems("kp"),
            ld4_elems("vp"),
            head(),
            b.source("wg_tree.wgsl").to_string(),
            b.source("paged_gated_attention_kv.wgsl").to_string(),
        ]
        .concat();
        let mut kv_consts = consts.clone();
        kv_consts.push(("WG", format!("{KV_WG}u")));
        (body, kv_consts)
    };
    let kv_tensors = [i[1], i[2], i[4], i[5], i[6], i[7], i[8], o[1], o[2]];
    b.dispatch(&key, kv_source, params, &kv_tensors, grid((t * hkv) as u32))?;
    if split {
        return paged_gated_split::record(b, op, p, &consts, i, o);
    }
    // 2. attention over the pools as stored, gated
    let bindings: Vec<Binding> = vec![
        read("qg", i[0].dtype),
        read("qn", i[3].dtype),
        read("cos", DType::F32),
        read("sin", DType::F32),
        read("bt", u),
        read("seqs", u),
        read("kp", o[1].dtype),
        read("vp", o[2].dtype),
        write("o", o[0].dtype),
    ];
    let key = KernelKey {
        entry: "paged_gated_attention",
        bindings,
        variant,
    };
    let source = || {
        let helpers = ld4("kp", 6, o[1].dtype) + &ld4("vp", 7, o[2].dtype);
        let body = [helpers, head(), b.source("paged_gated_attention.wgsl").to_string()].concat();
        (body, consts.clone())
    };
    let tensors = [i[0], i[3], i[5], i[6], i[7], i[8], o[1], o[2], o[0]];
    b.dispatch(&key, source, params, &tensors, rows)
}

/// paged_attention: one dispatch over every (row, kv head, partition), a row of two partitions or
/// more combined by its last workgroup; in runs of rows whose records fit the scratch.
pub(super) fn record_parts(
    b: &WgpuBackend,
    mut p: Params,
    consts: Vec<(&str, String)>,
    i: &[&Tensor],
    o: &Tensor,
) -> Result<()> {
    let (t, hq, hkv, dh) = (p.t as usize, p.hq as usize, p.hkv as usize, p.dh as usize);
    if paged_attention_lone::takes(b, &p) {
        return paged_attention_lone::record(b, p, &consts, i, o);
    }
    let g = hq / hkv;
    let np = partitions(p.mb as usize, p.bs as usize);
    let words = row_words(hq, dh, np);
    // rows a dispatch: as many as the scratch budget holds (at least one: supports() has
    // checked that one row's records fit a binding)
    let budget = b.tuning.paged_scratch.min(b.caps.max_binding) as usize / 4;
    let run = budget.checked_div(words).unwrap_or(t).clamp(1, t.max(1));
    let sc = b.scratch("paged-attention-parts", DType::U32, (run * words).max(1))?;
    // the hand-over's counters, one a (row, kv head) of a run: zero in a new buffer, and each
    // dispatch leaves them zero (the last workgroup of a row and kv head resets its own)
    let cnt = b.scratch("paged-attention-counters", DType::U32, run * hkv)?;
    let u = DType::U32;
    let bindings: Vec<Binding> = vec![
        read("q", i[0].dtype),
        read("kp", i[1].dtype),
        read("vp", i[2].dtype),
        read("bt", u),
        read("seqs", u),
        write("o", o.dtype),
        atomic("sc"),
        atomic("cnt"),
    ];
    // the pools' element offsets are known here: even ones read whole words only (the same values)
    let even = i[1].offset % 2 == 0 && i[2].offset % 2 == 0;
    let key = KernelKey {
        entry: "paged_attention",
        variant: format!("dh{dh}g{g}bs{}{}", p.bs, if even { "e" } else { "" }),
        bindings,
    };
    let source = || {
        let (part, hr) = part_hr(dh, g);
        let mut consts = consts.clone();
        consts.extend([
            ("G", format!("{g}u")),
            ("CK", format!("{CHUNK}u")),
            ("PK", format!("{PARTITION}u")),
            ("PART", format!("{part}u")),
            ("HR", format!("{hr}u")),
        ]);
        let helpers: String = (0..3)
            .map(|s| ld4_with(key.bindings[s].name, s, key.bindings[s].dtype, s > 0 && even))
            .collect();
        let body = [
            helpers.as_str(),
            b.source("paged_attention.wgsl"),
            b.source("paged_pool.wgsl"),
            b.source("paged_attention_loop.wgsl"),
            b.source("paged_attention_rows.wgsl"),
        ]
        .concat();
        (body, consts)
    };
    p.np = np as u32;
    for t0 in (0..t).step_by(run) {
        let n = run.min(t - t0);
        p.t0 = t0 as u32;
        p.t = n as u32;
        let params = bytemuck::bytes_of(&p);
        let tensors = [i[0], i[1], i[2], i[3], i[4], o, &sc, &cnt];
        let groups = grid((n * hkv * np) as u32);
        b.dispatch(&key, &source, params, &tensors, groups)?;
    }
    Ok(())
}
