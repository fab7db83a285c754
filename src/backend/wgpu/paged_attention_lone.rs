//! paged_attention for a lone decode step (batch invariance off, one sequence, one query row):
//! shaders/paged_attention_lone.wgsl, one dispatch of a workgroup per (kv head, key partition),
//! the last workgroup of a kv head combining its partitions (records and counters handed over
//! through atomic words in a scratch). A decode row's keys split over many workgroups, with no
//! second dispatch for the combine. Its bits depend on the table width (the partition length
//! does), which batch invariance off allows.
use super::attention::ld4_with;
use super::kernel::{atomic, grid, read, write, write_words, Binding, KernelKey};
use super::paged_attention::{pool_bs, Params};
use super::shaders::select_sg;
use super::{Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// Workgroup size (NT): fewer threads than the batched kernel's, so a short row's few keys make
/// more workgroups.
const NT: usize = 128;
/// Lanes a key row in the score phase (L): 4, or for a head_dim past 128 as many as keep a lane's
/// slice of the row at 8 vec4s. A lane's key slice and a thread's value rows are held whole in
/// registers, and 16 vec4s of each (head_dim 256 over 4 lanes) made the kernel several times
/// slower than the rows it loads account for.
fn lanes(dh4: usize) -> usize {
    4 * (dh4 / 32).max(1)
}

/// Keys a chunk (CK): NT / L, a key row a team of L lanes.
fn chunk(dh4: usize) -> usize {
    NT / lanes(dh4)
}

/// Whether the thread layout takes head_dim `dh`: NT threads as key subsets of Dh / 4 columns, a
/// chunk's keys split evenly over them, and key rows split evenly over L lanes.
fn shaped(dh: usize) -> bool {
    let dh4 = dh / 4;
    dh % 16 == 0 && dh4 > 0 && NT % dh4 == 0 && dh4 % lanes(dh4) == 0 && chunk(dh4) % (NT / dh4) == 0
}
/// Partitions a row at most: past CK * MAX_PARTS keys a partition takes several chunks, so the
/// last workgroup's combine stays short.
const MAX_PARTS: usize = 64;

/// Counter words at the head of the scratch, one a kv head: the kernel's records start past all
/// of them for every call, so one call's records never land on the counters of another call with
/// more kv heads (a counter left nonzero would hand the combine to the wrong workgroup).
const COUNTERS: usize = 256;

/// Whether a step of these Params is a lone decode step whose head_dim the kernel's thread layout
/// divides (NT threads as key subsets of Dh / 4 columns; a chunk's keys split evenly over them).
pub(super) fn takes(b: &WgpuBackend, p: &Params) -> bool {
    let shaped = shaped(p.dh as usize) && p.hkv as usize <= COUNTERS;
    let fits = Front::Q.out_heads(b, p.dh as usize, (p.hq / p.hkv) as usize).is_some();
    b.invariance() == BatchInvariance::Off && p.s == 1 && p.t == 1 && shaped && fits
}

/// Whether `b` runs the `sg` variant (each head's running max and denominator by subgroup
/// shuffles instead of a barrier and a serial loop): a head's CK scores are CK consecutive
/// invocations, so subgroups of at least CK, a whole number of them in the workgroup, hold them
/// within one.
fn takes_sg(b: &WgpuBackend, dh: usize) -> bool {
    let c = &b.caps;
    c.subgroup && c.subgroup_min as usize >= chunk(dh / 4) && NT % (c.subgroup_max.max(1) as usize) == 0
}

/// Keys a partition for a table of `keys` keys: whole chunks of `ck` keys, at most MAX_PARTS
/// partitions.
fn partition(keys: usize, ck: usize) -> usize {
    keys.div_ceil(ck * MAX_PARTS).max(1) * ck
}

/// Records the lone step: `i` = (q, kp, vp, bt, seqs), `o` the output [1, Hq, Dh].
pub(super) fn record(b: &WgpuBackend, p: Params, consts: &[(&str, String)], i: &[&Tensor], o: &Tensor) -> Result<()> {
    let even = i[1].offset % 2 == 0 && i[2].offset % 2 == 0;
    let front = vec![read("q", i[0].dtype), read("kp", i[1].dtype), read("vp", i[2].dtype)];
    let tensors = [i[0], i[1], i[2], i[3], i[4], o];
    dispatch(b, p, consts, front, Front::Q, even, &tensors)
}

/// The kernel's prologue: what its query rows are.
#[derive(Clone, Copy, PartialEq)]
enum Front {
    /// the query as given (paged_attention)
    Q,
    /// rms_norm_rope_kv_attention's stacked projection
    X,
    /// paged_gated_attention's query, gate, key and value
    Gated,
}

impl Front {
    /// Heads a round of the output's sum (OG): the most that divide `g` and leave the kernel within
    /// the device's workgroup memory (every head in one round takes one barrier where each head
    /// alone takes two), None where even one does not fit.
    fn out_heads(self, b: &WgpuBackend, dh: usize, g: usize) -> Option<usize> {
        let limit = b.caps.max_workgroup_storage as usize;
        (1..=g).rev().find(|&og| g % og == 0 && self.smem(dh, g, og) <= limit)
    }

    /// Its files, put before paged_attention_lone.wgsl in this order.
    fn files(self) -> &'static [&'static str] {
        match self {
            Front::Q => &["paged_attention_lone_q.wgsl"],
            Front::X => &["paged_attention_lone_x.wgsl", "paged_attention_lone_rope.wgsl"],
            Front::Gated => &["paged_attention_lone_gated.wgsl", "paged_attention_lone_rope.wgsl"],
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Front::Q => "",
            Front::X => "rope",
            Front::Gated => "gated",
        }
    }

    /// Bytes of workgroup memory of the kernel with this prologue (head_dim `dh`, group `g`, `og`
    /// heads a round of the output's sum).
    fn smem(self, dh: usize, g: usize, og: usize) -> usize {
        let (dh4, ck) = (dh / 4, chunk(dh / 4));
        // q_s, prow_s, part_s (CK * G * L floats), sc_s, m_s + al_s, out_s (OG * NT vec4s),
        // seq_w + count_w, new_k_s + new_v_s
        let attend = 16 * g * dh4 + 4 * ck + 4 * g * NT + 4 * g * ck + 8 * g + 16 * og * NT + 32 + 32 * dh4;
        // raw_s, ss_s, inv_s (paged_attention_lone_rope.wgsl); ps_w or gate_s
        let rope = 20 * (g + 2) * dh4 + 4 * (g + 2);
        attend
            + match self {
                Front::Q => 0,
                Front::X => rope + 8,
                Front::Gated => rope + 16 * g * dh4,
            }
    }
}

/// Storage bindings of the gated kernel.
const GATED_BINDINGS: u32 = 13;

/// Whether paged_gated_attention's step (`i`, `o`: its operands) is a lone decode step this kernel
/// takes: the layout's head_dim and rotary dims, pools at even element offsets (word stores), and
/// the device's bindings and workgroup memory.
pub(super) fn takes_gated(b: &WgpuBackend, p: &Params, rotary_dim: usize, o: &[&Tensor]) -> bool {
    let (dh, g) = (p.dh as usize, (p.hq / p.hkv) as usize);
    takes(b, p)
        && rotary_dim % 8 == 0
        && rotary_dim <= dh
        && g <= super::paged_attention::MAX_GROUP
        && o[1].offset % 2 == 0
        && o[2].offset % 2 == 0
        && b.caps.max_storage_buffers >= GATED_BINDINGS
        && Front::Gated.out_heads(b, dh, g).is_some()
}

/// paged_gated_attention's lone decode step in one dispatch: `i` = (qg, k, v, qn, kn, cos, sin,
/// bt, seqs), `o` = (out, kp, vp); `p` has the op's scale, eps and half.
pub(super) fn record_gated(b: &WgpuBackend, mut p: Params, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (kp, vp) = (o[1], o[2]);
    p.max_pos = i[5].shape[0] as u32;
    let consts = [("DH4", format!("{}u", p.dh / 4)), pool_bs(p.bs)];
    let f = DType::F32;
    let front = vec![
        read("qg", i[0].dtype),
        read("k", i[1].dtype),
        read("v", i[2].dtype),
        read("qn", i[3].dtype),
        read("kn", i[4].dtype),
        read("cos", f),
        read("sin", f),
        write_words("kp", kp.dtype),
        write_words("vp", vp.dtype),
    ];
    let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], i[6], kp, vp, i[7], i[8], o[0]];
    dispatch(b, p, &consts, front, Front::Gated, true, &tensors)
}

/// rms_norm_rope_kv_attention on wgpu: a lone decode step with invariance off, whose head_dim
/// and rotary dims the kernel's layout takes, and a device with its 12 storage bindings and the
/// workgroup memory it needs.
pub fn supports_rope(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let Op::RmsNormRopeKvAttention { rotary_dim, .. } = desc.op else {
        unreachable!()
    };
    let (_, att) = desc.op.rope_kv_attention_parts().expect("the fused op");
    let (i, o) = (&desc.inputs, &desc.outputs);
    let (t, s, dh) = (o[0].shape[0], i[7].shape[0], o[1].shape[3]);
    if b.invariance() != BatchInvariance::Off || t != 1 || s != 1 {
        return Support::No(format!(
            "fused into the attention of a lone decode step only (one sequence, one row, batch invariance off; here {t} rows, {s} sequences, {:?}): run rms_norm_rope_kv and paged_attention",
            b.invariance()
        ));
    }
    if !shaped(dh) || rotary_dim % 8 != 0 || rotary_dim > dh {
        return Support::No(format!(
            "head_dim {dh} (a multiple of 16 dividing {}) and rotary_dim {rotary_dim} (a multiple of 8) do not fit the kernel's layout",
            4 * NT
        ));
    }
    if o[1].shape[2] > COUNTERS {
        return Support::No(format!(
            "{} kv heads: the kernel keeps at most {COUNTERS} counters",
            o[1].shape[2]
        ));
    }
    let g = o[0].shape[1] / o[1].shape[2].max(1);
    if Front::X.out_heads(b, dh, g).is_none() {
        return Support::No(format!(
            "needs {} bytes of workgroup memory (group of {g} query heads), the device allows {}",
            Front::X.smem(dh, g, 1),
            b.caps.max_workgroup_storage
        ));
    }
    if b.caps.max_storage_buffers < ROPE_BINDINGS {
        return Support::No(format!(
            "binds {ROPE_BINDINGS} storage buffers, the device allows {} per stage",
            b.caps.max_storage_buffers
        ));
    }
    // the attention's own limits (group size, workgroup memory, the scratch)
    let q = TensorDesc::new(DType::F32, &o[0].shape);
    let ins = vec![q, o[1].clone(), o[2].clone(), i[6].clone(), i[7].clone()];
    super::paged_attention::supports(b, &OpDesc::new(att, ins, vec![o[0].clone()]))
}

/// Storage bindings of the fused kernel.
const ROPE_BINDINGS: u32 = 12;

/// `i` = (x, w, pos, cos, sin, slots, bt, seqs), `o` = (out, kp, vp). Pools at an odd element
/// offset (their word stores would share a word with a neighbour's row) take the two ops apart.
pub fn record_rope(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::RmsNormRopeKvAttention {
        eps, rotary_dim, scale, ..
    } = *op
    else {
        unreachable!()
    };
    let (kp, vp) = (o[1], o[2]);
    if kp.offset % 2 != 0 || vp.offset % 2 != 0 {
        let (kv, att) = op.rope_kv_attention_parts().expect("the fused op");
        let q = b
            .scratch("paged-rope-q", DType::F32, o[0].numel())?
            .reshape(&o[0].shape)?;
        super::rms_norm_rope::record_kv(b, &kv, &i[..6], &[&q, kp, vp])?;
        return super::paged_attention::record(b, &att, &[&q, kp, vp, i[6], i[7]], &[o[0]]);
    }
    let hq = o[0].shape[1];
    let mut p = Params::new(1, hq, kp, i[6], scale, eps, rotary_dim / 2);
    p.max_pos = i[3].shape[0] as u32;
    p.wstride = if i[1].shape.len() == 2 { p.dh } else { 0 };
    let consts = [("DH4", format!("{}u", p.dh / 4)), pool_bs(p.bs)];
    let front = vec![
        read("x", i[0].dtype),
        read("w", i[1].dtype),
        read("pos", DType::U32),
        read("cos", DType::F32),
        read("sin", DType::F32),
        read("slots", DType::U32),
        write_words("kp", kp.dtype),
        write_words("vp", vp.dtype),
    ];
    let tensors = [i[0], i[1], i[2], i[3], i[4], i[5], kp, vp, i[6], i[7], o[0]];
    dispatch(b, p, &consts, front, Front::X, true, &tensors)
}

/// The kernel with the prologue `prologue` (`bindings` first, the pools their last two), then bt,
/// seqs, o and the scratch.
fn dispatch(
    b: &WgpuBackend,
    mut p: Params,
    consts: &[(&str, String)],
    mut bindings: Vec<Binding>,
    prologue: Front,
    even: bool,
    tensors: &[&Tensor],
) -> Result<()> {
    let (hkv, dh) = (p.hkv as usize, p.dh as usize);
    let g = p.hq as usize / hkv;
    let keys = p.mb as usize * p.bs as usize;
    let pk = partition(keys, chunk(dh / 4));
    let np = keys.div_ceil(pk).max(1);
    p.np = np as u32;
    p.pk = pk as u32;
    p.t0 = 0;
    // the counters (zero between dispatches: the last workgroup of a head resets its own), then
    // the records
    let sc = b.scratch("paged-attention-lone", DType::U32, COUNTERS + hkv * np * g * (dh + 2))?;
    let u = DType::U32;
    let pools = bindings.len() - 2;
    bindings.extend([
        read("bt", u),
        read("seqs", u),
        write("o", tensors[tensors.len() - 1].dtype),
        atomic("sc"),
    ]);
    let sg = takes_sg(b, dh);
    let og = prologue.out_heads(b, dh, g).unwrap_or(1);
    let key = KernelKey {
        entry: "paged_attention_lone",
        variant: format!(
            "dh{dh}g{g}o{og}bs{}{}{}{}",
            p.bs,
            if even { "e" } else { "" },
            prologue.tag(),
            if sg { "sg" } else { "" }
        ),
        bindings,
    };
    let source = || {
        let mut consts: Vec<(&str, String)> = consts.iter().filter(|(n, _)| *n != "NT").cloned().collect();
        consts.extend([
            ("NT", format!("{NT}u")),
            ("G", format!("{g}u")),
            ("OG", format!("{og}u")),
            ("L", format!("{}u", lanes(dh / 4))),
            ("CK", format!("{}u", chunk(dh / 4))),
            ("CW", format!("{COUNTERS}u")),
        ]);
        // the pools' vec4 loads; the plain prologue's query's (the fused one reads x by element)
        let mut helpers: String = (pools..pools + 2)
            .map(|s| ld4_with(key.bindings[s].name, s, key.bindings[s].dtype, even))
            .collect();
        if prologue == Front::Q {
            helpers += &ld4_with("q", 0, key.bindings[0].dtype, false);
        }
        let body = [
            helpers.as_str(),
            b.source("paged_attention.wgsl"),
            b.source("paged_pool.wgsl"),
        ]
        .into_iter()
        .chain(prologue.files().iter().map(|f| b.source(f)))
        .chain([select_sg(b.source("paged_attention_lone.wgsl"), sg).as_str()])
        .collect::<String>();
        (body, consts)
    };
    let mut all: Vec<&Tensor> = tensors.to_vec();
    all.push(&sc);
    b.dispatch(&key, source, bytemuck::bytes_of(&p), &all, grid((hkv * np) as u32))
}
