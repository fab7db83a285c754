//! paged_attention and paged_gated_attention: shaders/paged_attention.wgsl (Params, the block
//! table addressing, the batch-invariance argument) + a key loop + the kernel.
//! paged_attention: paged_attention_loop.wgsl + paged_attention_rows.wgsl, one workgroup per
//! (query row, kv head) for all G = Hq / Hkv query heads of it, so a GQA group's K / V rows are
//! read once (and coalesced: a team of lanes shares a key row); G is a compile-time constant of
//! the kernel (its variant), at most MAX_GROUP.
//! paged_gated_attention: paged_decode_attend.wgsl + attention_decode_loop.wgsl (decode_attend,
//! one workgroup per (query row, query head)), two dispatches: paged_gated_attention_kv.wgsl (new
//! k / v into the pools) then paged_gated_attention.wgsl.
//! Every query row is its own workgroups, decode and prefill alike: that is what makes a row's
//! bits independent of the batch. (A prefill tile that shares key reads between rows is the speed
//! issue's to add, under the same per-row order.)
use super::attention::{decode_smem, ld4, DECODE_NT};
use super::kernel::{grid, read, write, Binding, KernelKey};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};

/// Workgroup size of the gated op's k / v dispatch (one thread per token and kv head).
const KV_WG: u32 = 64;
/// Storage buffers the gated op's dispatches bind (each of the two).
const GATED_BINDINGS: usize = 9;
/// paged_attention: query heads a workgroup attends together (Hq / Hkv), at most (registers: G
/// vec4 accumulators a thread; workgroup memory grows with G).
pub const MAX_GROUP: usize = 8;
/// paged_attention's chunk of keys (CK in paged_attention_loop.wgsl): a multiple of 16 and of
/// DECODE_NT / 4. Fixed: a row's reduction order depends on it.
const CHUNK: usize = 128;

/// paged_attention_loop.wgsl's PART and HR for head_dim `dh` and group `g`.
fn part_hr(dh: usize, g: usize) -> (usize, usize) {
    let part = (g * CHUNK).max(DECODE_NT);
    (part, (part / DECODE_NT).min(DECODE_NT / (dh / 4)))
}

/// Workgroup memory of paged_attention_loop.wgsl (+ paged_attention.wgsl's row_w) in bytes.
fn paged_smem(dh: usize, g: usize) -> usize {
    let (part, _) = part_hr(dh, g);
    // q_s, part_s, sc_s, prow_s, seg_s, m_s + al_s, row_w
    16 * g * (dh / 4) + 16 * part + 4 * g * CHUNK + 4 * CHUNK + 4 * g * (CHUNK / 16) + 8 * g + 16
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 12],
    t: u32,
    hq: u32,
    hkv: u32,
    dh: u32,
    group: u32,
    scale: f32,
    bs: u32,
    nb: u32,
    mb: u32,
    s: u32,
    half: u32,
    eps: f32,
}
const _: () = assert!(std::mem::size_of::<Params>() == 96);

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
    let (nb, bs, hkv, dh) = (pool.shape[0], pool.shape[1], pool.shape[2], pool.shape[3]);
    let p = Params {
        offs: [0; 12],
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
    };
    let mut consts = vec![("DH4", format!("{}u", dh / 4)), ("NT", format!("{DECODE_NT}u"))];
    let params = bytemuck::bytes_of(&p);
    let u = DType::U32;
    if !gated {
        let g = hq / hkv;
        let (part, hr) = part_hr(dh, g);
        consts.extend([
            ("G", format!("{g}u")),
            ("CK", format!("{CHUNK}u")),
            ("PART", format!("{part}u")),
            ("HR", format!("{hr}u")),
        ]);
        let bindings: Vec<Binding> = vec![
            read("q", i[0].dtype),
            read("kp", i[1].dtype),
            read("vp", i[2].dtype),
            read("bt", u),
            read("seqs", u),
            write("o", o[0].dtype),
        ];
        let helpers: String = (0..3).map(|s| ld4(bindings[s].name, s, bindings[s].dtype)).collect();
        let body = [
            helpers.as_str(),
            b.source("paged_attention.wgsl"),
            b.source("paged_attention_loop.wgsl"),
            b.source("paged_attention_rows.wgsl"),
        ]
        .concat();
        let key = KernelKey {
            entry: "paged_attention",
            bindings,
            variant: format!("dh{dh}g{g}"),
        };
        return b.dispatch(
            &key,
            &body,
            &consts,
            params,
            &[i[0], i[1], i[2], i[3], i[4], o[0]],
            grid((t * hkv) as u32),
        );
    }
    let variant = format!("dh{dh}");
    let head = [
        b.source("paged_attention.wgsl"),
        b.source("paged_decode_attend.wgsl"),
        b.source("attention_decode_loop.wgsl"),
    ]
    .concat();
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
    let body = [
        ld4_elems("kp"),
        ld4_elems("vp"),
        head.clone(),
        b.source("paged_gated_attention_kv.wgsl").to_string(),
    ]
    .concat();
    let key = KernelKey {
        entry: "paged_gated_attention_kv",
        bindings: kv_bindings,
        variant: variant.clone(),
    };
    let mut kv_consts = consts.clone();
    kv_consts.push(("WG", format!("{KV_WG}u")));
    let kv_tensors = [i[1], i[2], i[4], i[5], i[6], i[7], i[8], o[1], o[2]];
    b.dispatch(
        &key,
        &body,
        &kv_consts,
        params,
        &kv_tensors,
        grid(((t * hkv) as u32).div_ceil(KV_WG)),
    )?;
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
    let helpers = ld4("kp", 6, o[1].dtype) + &ld4("vp", 7, o[2].dtype);
    let body = [helpers, head, b.source("paged_gated_attention.wgsl").to_string()].concat();
    let key = KernelKey {
        entry: "paged_gated_attention",
        bindings,
        variant,
    };
    let tensors = [i[0], i[3], i[5], i[6], i[7], i[8], o[1], o[2], o[0]];
    b.dispatch(&key, &body, &consts, params, &tensors, rows)
}
