//! A long prefill's key partitions. The prefill tile (attention_prefill_loop.wgsl) gives each
//! (query block, head) one workgroup that walks the block's keys in order, so the last query
//! block's workgroup walks all n_past + T keys while the first walks a block's worth: the prefill
//! lasts as long as that one workgroup, mostly alone on its compute unit at the end. Where the
//! query blocks are too few to fill the GPU (fewer workgroups than attention.rs
//! `FILL_WORKGROUPS`: a short chunk after a long cache) and past `PART_KEYS` keys in all, a
//! query block's keys go in runs of `Tile::kp` to workgroups of their own
//! (KP > 0 in the loop), each leaving its rows normalized over its run with their max score and
//! softmax sum in a scratch; shaders/attention_prefill_merge.wgsl then merges the runs of each row.
//! The order of sums differs from the one-workgroup walk's (batch invariance does not reach these
//! kernels: the plain attention op's, and paged_attention_prefill.rs', the single-stream engine's
//! prefill over its paged cache). The paged prefill's position is on the device (seqs): its grid
//! is counted from the block table's length in keys, a bound the host knows (the engine sizes the
//! table to the sequence), the partitions past a block's keys doing nothing. A fresh prompt's
//! query blocks fill the GPU already, and partitions there only add rows to merge.
use super::kernel::{grid, read, write, KernelKey};
use super::WgpuBackend;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Keys a partition: a multiple of every tile's key block. Below this many keys in all (n_past +
/// T) a prefill keeps one workgroup a query block and no merge.
pub(super) const PART_KEYS: usize = 512;

/// Keys a partition for T queries after n_past keys over Hq heads of head_dim `dh` (0: none):
/// `PART_KEYS`, doubled while the scratch (every partition's rows and two floats a row) would pass
/// the device's largest binding.
pub(super) fn part_keys(b: &WgpuBackend, t: usize, n_past: usize, hq: usize, dh: usize) -> usize {
    let keys = n_past + t;
    let mut kp = PART_KEYS;
    while kp < keys {
        if scratch_words(t, n_past, hq, dh, kp) as u64 * 4 <= b.caps.max_binding {
            return kp;
        }
        kp *= 2;
    }
    0
}

/// Partitions of a prefill whose tile takes `kp` keys a partition (1 where kp is 0).
pub(super) fn parts(t: usize, n_past: usize, kp: usize) -> usize {
    if kp == 0 {
        1
    } else {
        (n_past + t).div_ceil(kp)
    }
}

fn scratch_words(t: usize, n_past: usize, hq: usize, dh: usize, kp: usize) -> usize {
    parts(t, n_past, kp) * t * hq * (dh + 2)
}

/// The scratch the partitions write (`po`), sized for this prefill.
pub(super) fn scratch(b: &WgpuBackend, t: usize, n_past: usize, hq: usize, dh: usize, kp: usize) -> Result<Tensor> {
    b.scratch(
        "attention-prefill-parts",
        DType::F32,
        scratch_words(t, n_past, hq, dh, kp),
    )
}

/// What the loop calls with KP > 0: a row's output vec4 and its stats into `po`, at row (part, t,
/// h) of Dh + 2 floats (attention_prefill_merge.wgsl reads them there).
pub(super) const HELPERS: &str = "
fn part_row(b: QBlock, i: u32) -> u32 {
    return ((b.part * p.t + b.t0 + i) * p.hq + b.h) * (p.dh + 2u);
}
fn prefill_part_out(b: QBlock, i: u32, d4: u32, o: vec4<f32>) {
    let at = part_row(b, i) + d4 * 4u;
    st_po(at, o.x);
    st_po(at + 1u, o.y);
    st_po(at + 2u, o.z);
    st_po(at + 3u, o.w);
}
fn prefill_stats(b: QBlock, i: u32, m: f32, l: f32) {
    let at = part_row(b, i) + p.dh;
    st_po(at, m);
    st_po(at + 1u, l);
}
";

/// The scratch binding of the partitioned kernel.
pub(super) fn binding() -> super::kernel::Binding {
    write("po", DType::F32)
}

const WG: u32 = 64;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    t: u32,
    hq: u32,
    dh: u32,
    n_past: u32,
    kp: u32,
    keys: u32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

/// The first query's position as the merge reads it: the host's n_past, or the paged kernel's
/// from seqs (the checks of paged_attention_prefill.wgsl's `prefill_n_past`).
const N_PAST_HOST: &str = "fn merge_n_past() -> u32 { return p.n_past; }\n";
const N_PAST_SEQS: &str = "fn merge_n_past() -> u32 {
    let start = ld_seqs(0u);
    let cnt = ld_seqs(1u);
    let kv = ld_seqs(2u);
    return select(0u, kv - cnt, start == 0u && cnt == p.t && cnt <= kv && kv <= p.keys);
}
";

/// The merge: `po` (the partitions' rows) into `o` [T, Hq, Dh]. `paged`: the paged kernel's seqs
/// and its table length in keys (the first query's position from seqs; n_past is then the
/// host's bound on it, which counted the partitions).
pub(super) fn merge(
    b: &WgpuBackend,
    shape: (usize, usize, usize, usize),
    kp: usize,
    po: &Tensor,
    o: &Tensor,
    paged: Option<(&Tensor, usize)>,
) -> Result<()> {
    let (t, hq, dh, n_past) = shape;
    let mut bindings = vec![read("po", DType::F32), write("o", o.dtype)];
    let mut tensors = vec![po, o];
    if let Some((seqs, _)) = paged {
        bindings.push(read("seqs", DType::U32));
        tensors.push(seqs);
    }
    let key = KernelKey {
        entry: "attention_prefill_merge",
        bindings,
        variant: if paged.is_some() { "paged" } else { "" }.to_string(),
    };
    let p = Params {
        offs: [0; 8],
        t: t as u32,
        hq: hq as u32,
        dh: dh as u32,
        n_past: n_past as u32,
        kp: kp as u32,
        keys: paged.map_or(0, |(_, k)| k as u32),
        pad: [0; 2],
    };
    b.dispatch(
        &key,
        || {
            let n_past = if paged.is_some() { N_PAST_SEQS } else { N_PAST_HOST };
            let src = [b.source("attention_prefill_merge.wgsl"), n_past].concat();
            (src, vec![("WG", format!("{WG}u"))])
        },
        bytemuck::bytes_of(&p),
        &tensors,
        grid(((t * hq * dh / 4) as u32).div_ceil(WG)),
    )
}
