//! paged_attention for a lone decode step (batch invariance off, one sequence, one query row):
//! shaders/paged_attention_lone.wgsl, one dispatch of a workgroup per (kv head, key partition),
//! the last workgroup of a kv head combining its partitions (records and counters handed over
//! through atomic words in a scratch). A decode row's keys split over many workgroups, with no
//! second dispatch for the combine. Its bits depend on the table width (the partition length
//! does), which batch invariance off allows.
use super::attention::ld4_with;
use super::kernel::{atomic, grid, read, write, write_words, Binding, KernelKey};
use super::paged_attention::Params;
use super::{Support, WgpuBackend};
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// Workgroup size (NT): fewer threads than the batched kernel's, so a short row's few keys make
/// more workgroups. Every workgroup array is no larger than the batched kernel's, so
/// paged_attention::supports' limits cover this kernel too.
const NT: usize = 128;
/// Keys a chunk (CK): NT / 4, a key row a team of four lanes.
const CHUNK: usize = NT / 4;
/// Partitions a row at most: past CHUNK * MAX_PARTS keys a partition takes several chunks, so the
/// last workgroup's combine stays short.
const MAX_PARTS: usize = 64;

/// Counter words at the head of the scratch, one a kv head: the kernel's records start past all
/// of them for every call, so one call's records never land on the counters of another call with
/// more kv heads (a counter left nonzero would hand the combine to the wrong workgroup).
const COUNTERS: usize = 256;

/// Whether a step of these Params is a lone decode step whose head_dim the kernel's thread layout
/// divides (NT threads as key subsets of Dh / 4 columns; a chunk's keys split evenly over them).
pub(super) fn takes(b: &WgpuBackend, p: &Params) -> bool {
    let dh4 = p.dh as usize / 4;
    let shaped = dh4 > 0 && NT % dh4 == 0 && CHUNK % (NT / dh4) == 0 && p.hkv as usize <= COUNTERS;
    b.invariance() == BatchInvariance::Off && p.s == 1 && p.t == 1 && shaped
}

/// Keys a partition for a table of `keys` keys: whole chunks, at most MAX_PARTS partitions.
fn partition(keys: usize) -> usize {
    keys.div_ceil(CHUNK * MAX_PARTS).max(1) * CHUNK
}

/// Records the lone step: `i` = (q, kp, vp, bt, seqs), `o` the output [1, Hq, Dh].
pub(super) fn record(b: &WgpuBackend, p: Params, consts: &[(&str, String)], i: &[&Tensor], o: &Tensor) -> Result<()> {
    let even = i[1].offset % 2 == 0 && i[2].offset % 2 == 0;
    let front = vec![read("q", i[0].dtype), read("kp", i[1].dtype), read("vp", i[2].dtype)];
    let tensors = [i[0], i[1], i[2], i[3], i[4], o];
    dispatch(b, p, consts, front, "paged_attention_lone_q.wgsl", even, &tensors)
}

/// rms_norm_rope_kv_attention on wgpu: a lone decode step with invariance off, whose head_dim
/// and rotary dims the kernel's layout takes, and a device with its 12 storage bindings.
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
    let dh4 = dh / 4;
    if dh % 16 != 0 || dh4 == 0 || NT % dh4 != 0 || CHUNK % (NT / dh4) != 0 || rotary_dim % 8 != 0 || rotary_dim > dh {
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
    let consts = [("DH4", format!("{}u", p.dh / 4))];
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
    dispatch(b, p, &consts, front, "paged_attention_lone_rope.wgsl", true, &tensors)
}

/// The kernel with the prologue `front` binds first (its file `prologue`; its last two bindings
/// the pools), then bt, seqs, o and the scratch.
fn dispatch(
    b: &WgpuBackend,
    mut p: Params,
    consts: &[(&str, String)],
    mut bindings: Vec<Binding>,
    prologue: &'static str,
    even: bool,
    tensors: &[&Tensor],
) -> Result<()> {
    let (hkv, dh) = (p.hkv as usize, p.dh as usize);
    let g = p.hq as usize / hkv;
    let keys = p.mb as usize * p.bs as usize;
    let pk = partition(keys);
    let np = keys.div_ceil(pk).max(1);
    p.np = np as u32;
    p.pk = pk as u32;
    p.t0 = 0;
    // the counters (zero between dispatches: the last workgroup of a head resets its own), then
    // the records
    let sc = b.scratch("paged-attention-lone", DType::U32, COUNTERS + hkv * np * g * (dh + 2))?;
    let u = DType::U32;
    let pools = bindings.len() - 2;
    let rope = prologue.ends_with("rope.wgsl");
    bindings.extend([
        read("bt", u),
        read("seqs", u),
        write("o", tensors[tensors.len() - 1].dtype),
        atomic("sc"),
    ]);
    let key = KernelKey {
        entry: "paged_attention_lone",
        variant: format!(
            "dh{dh}g{g}{}{}",
            if even { "e" } else { "" },
            if rope { "rope" } else { "" }
        ),
        bindings,
    };
    let source = || {
        let mut consts: Vec<(&str, String)> = consts.iter().filter(|(n, _)| *n != "NT").cloned().collect();
        consts.extend([
            ("NT", format!("{NT}u")),
            ("G", format!("{g}u")),
            ("CK", format!("{CHUNK}u")),
            ("CW", format!("{COUNTERS}u")),
        ]);
        // the pools' vec4 loads; the plain prologue's query's (the fused one reads x by element)
        let mut helpers: String = (pools..pools + 2)
            .map(|s| ld4_with(key.bindings[s].name, s, key.bindings[s].dtype, even))
            .collect();
        if !rope {
            helpers += &ld4_with("q", 0, key.bindings[0].dtype, false);
        }
        let body = [
            helpers.as_str(),
            b.source("paged_attention.wgsl"),
            b.source("paged_pool.wgsl"),
            b.source(prologue),
            b.source("paged_attention_lone.wgsl"),
        ]
        .concat();
        (body, consts)
    };
    let mut all: Vec<&Tensor> = tensors.to_vec();
    all.push(&sc);
    b.dispatch(&key, source, bytemuck::bytes_of(&p), &all, grid((hkv * np) as u32))
}
