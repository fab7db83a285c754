//! Block-quantized weights (GGUF q8_0, q4_0, q4_1, q4_k, q6_k, iq4_nl) kept quantized in device
//! memory: `linear` with a quantized w and `embedding` / `embedding_shard` with a quantized table.
//! The kernels read the raw blocks as u32 words and dequantize in registers (or, in the GEMM, one
//! 64 x 32 tile at a time into workgroup memory); a weight is never expanded in device memory.
//!
//! The wgpu device keeps GGUF's byte order except for q8_0, whose blocks are regrouped eight at a
//! time as their quants then their scales (qlayout.rs, called by context.rs' upload / download:
//! the same bytes, word-aligned quants).
//!
//! A kernel is three or four WGSL files: shaders/qcommon.wgsl (Params, word/f16/byte readers),
//! the type file (q8_0.wgsl, q4_0.wgsl (also iq4_nl), q4_1.wgsl, q4_k.wgsl, q6_k.wgsl: the block
//! layout as a matvec lane `lane_dot` and an exact 4-element dequantizer `wq4`) and the entry file:
//! * `qmatvec` (shaders/qmatvec.wgsl), M <= MATVEC_MAX_M: WG threads x R rows a workgroup, one x
//!   row, threads striding over the row's lane slots (coalesced weight and x reads; the x values
//!   serve all R rows; subgroup reduction where available). Its lanes: shaders/qlanes.wgsl
//!   (scalar words, any x dtype) or, for q4_k and q8_0 with f32 x and rows on 16 bytes, the
//!   type's vec4 lanes (q4_k_v4.wgsl, q8_0_v4.wgsl: 16-byte weight and x loads).
//! * `qgemm` (shaders/qgemm.wgsl), larger M: 64 x 64 tiles, K steps of 32.
//! * `qembedding` (shaders/qembed.wgsl): 4 elements of one row per invocation.
//!
//! The weight's position is passed as a byte offset (`wbase`) in Params; the dispatcher's element
//! offset slot for it is unused.
use super::kernel::{grid, read, read4, write, KernelKey};
use super::linear::{select_sg, SG_SUM};
use super::{Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

const COMMON: &str = include_str!("../../../shaders/qcommon.wgsl");
const MATVEC: &str = include_str!("../../../shaders/qmatvec.wgsl");
const LANES: &str = include_str!("../../../shaders/qlanes.wgsl");
const GEMM: &str = include_str!("../../../shaders/qgemm.wgsl");
const EMBED: &str = include_str!("../../../shaders/qembed.wgsl");
const QDOTS: &str = include_str!("../../../shaders/qdots.wgsl");
const DP_Q4K: &str = include_str!("../../../shaders/q4_k_dp.wgsl");
const LIMBS: &str = include_str!("../../../shaders/limbs.wgsl");
const XLIMBS: &str = include_str!("../../../shaders/xlimbs.wgsl");
const MATVEC_XS: &str = include_str!("../../../shaders/qmatvec_xs.wgsl");
/// The limb lanes' x accessors where the pre-pass's buffer is bound as x.
const XLIMB_BOUND: &str = "fn xlimb(i: u32) -> vec4<u32> {\n    return x_v4[i];\n}\nfn xbase(xr: u32) -> u32 {\n    return p.offs[0].x / 4u + xr / 64u * 14u;\n}\nfn xstride() -> u32 {\n    return p.k / 64u;\n}\nfn xslot() -> u32 {\n    return 1u;\n}\n";

/// Weight elements from which q4_k's matvec (K >= 2048) takes the integer-dot lanes with x limbs
/// made by each workgroup, and from which with x limbs from the pre-pass (its dispatch, ~5 us
/// on the H200, pays off where each workgroup's own conversion costs more). Measured on the
/// H200 (docs/BENCHMARKS.md r8): K 4096 N 4096 .. K 4096 N 14336 the former, K 8192 N 28672 the
/// latter; K 1024 rows (16 slots of 64 for 32 threads) keep the vec4 lanes.
const LIMBS_WG_MIN: usize = 1 << 22;
const LIMBS_PRE_MIN: usize = 1 << 27;
/// u32 words of x limbs a 32-element block (xlimbs.wgsl).
const LIMB_WORDS: usize = 28;

/// This file's entry points: built without wgpu's runtime checks (kernel.rs `shader_checks`).
pub(super) const UNCHECKED_ENTRIES: [&str; 5] = ["qmatvec", "qmatvec_xs", "xlimbs", "qgemm", "qembedding"];

/// Largest M that goes to the matvec kernel (one x row a workgroup: W is read M times, mostly
/// from cache).
pub const MATVEC_MAX_M: usize = 8;
const EMBED_WG: u32 = 128;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    m: u32,
    n: u32,
    k: u32,
    wbase: u32,
    rowb: u32,
    first: u32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 64);

/// The type file of a quantized dtype and its extra constants.
fn type_src(d: DType) -> (&'static str, &'static str) {
    match d {
        DType::Q8_0 => (include_str!("../../../shaders/q8_0.wgsl"), ""),
        DType::Q4_0 => (include_str!("../../../shaders/q4_0.wgsl"), "const IQ = false;\n"),
        DType::IQ4NL => (include_str!("../../../shaders/q4_0.wgsl"), "const IQ = true;\n"),
        DType::Q4_1 => (include_str!("../../../shaders/q4_1.wgsl"), ""),
        DType::Q4K => (include_str!("../../../shaders/q4_k.wgsl"), ""),
        DType::Q6K => (include_str!("../../../shaders/q6_k.wgsl"), ""),
        d => unreachable!("quant: {d} is not a block-quantized dtype"),
    }
}

/// The vec4 matvec lanes of a dtype (f32 x, rows on 16 bytes), where it has them.
fn v4_src(d: DType) -> Option<&'static str> {
    match d {
        DType::Q8_0 => Some(include_str!("../../../shaders/q8_0_v4.wgsl")),
        DType::Q4K => Some(include_str!("../../../shaders/q4_k_v4.wgsl")),
        _ => None,
    }
}

/// The lanes of a matvec: scalar words (qlanes.wgsl, any x dtype), the type's vec4 lanes (f32 x
/// read as vec4), or q4_k's integer-dot lanes over x as byte limbs (q4_k_dp.wgsl): limbs from the
/// xlimbs.wgsl pre-pass (`Limbs`), or made by each workgroup into workgroup memory (`LimbsWg`,
/// the qmatvec_xs.wgsl entry; its `sg` means subgroups of exactly 32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Lanes {
    Words,
    V4,
    Limbs,
    LimbsWg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Matvec { sg: bool, lanes: Lanes },
    Gemm,
    Embed,
}

/// The WGSL body (common + type + entry), built once per (kind, dtype) for the process.
fn body(kind: Kind, d: DType) -> &'static str {
    static CACHE: OnceLock<Mutex<HashMap<(Kind, DType), &'static str>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry((kind, d)).or_insert_with(|| {
        let (ty, extra) = type_src(d);
        let entry = match kind {
            Kind::Matvec {
                sg,
                lanes: Lanes::Words,
            } => select_sg(&format!("{LANES}\n{QDOTS}\n{MATVEC}"), sg),
            Kind::Matvec { sg, lanes: Lanes::V4 } => {
                select_sg(&format!("{}\n{QDOTS}\n{MATVEC}", v4_src(d).expect("no vec4 lanes")), sg)
            }
            Kind::Matvec {
                sg,
                lanes: Lanes::Limbs,
            } => select_sg(&format!("{XLIMB_BOUND}{DP_Q4K}\n{QDOTS}\n{MATVEC}"), sg),
            Kind::Matvec {
                sg,
                lanes: Lanes::LimbsWg,
            } => select_sg(&format!("{LIMBS}\n{DP_Q4K}\n{QDOTS}\n{MATVEC_XS}"), sg),
            Kind::Gemm => GEMM.to_string(),
            Kind::Embed => EMBED.to_string(),
        };
        let entry = match kind {
            Kind::Matvec { sg: true, .. } => format!("{SG_SUM}\n{entry}"),
            _ => entry,
        };
        Box::leak(format!("{COMMON}\n{extra}{ty}\n{entry}").into_boxed_str())
    })
}

fn x_kind(d: DType) -> u32 {
    match d {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::BF16 => 2,
        _ => unreachable!("quant linear: x must be a float dtype, got {d}"),
    }
}

/// The byte offset of a quantized tensor in its buffer (a whole number of word-aligned blocks).
fn wbase(t: &Tensor, what: &str) -> Result<u32> {
    let b = t.byte_offset();
    if b % 4 != 0 || (b + t.nbytes()) as u64 > u32::MAX as u64 {
        return Err(Error::Other(format!(
            "{what}: {t:?} starts at byte {b}: not word aligned or past u32 byte addresses"
        )));
    }
    Ok(b as u32)
}

/// Size limits of the quantized kernels (the contract itself is `OpDesc::check`).
pub fn supports(_b: &WgpuBackend, desc: &OpDesc) -> Support {
    let w = &desc.inputs[0..2]
        .iter()
        .find(|t| t.dtype.is_quant())
        .expect("quant::supports without a quantized operand");
    if w.nbytes() as u64 + 4 >= u32::MAX as u64 {
        return Support::No(format!(
            "a {} byte {} operand: the quantized kernels address bytes with 32 bits",
            w.nbytes(),
            w.dtype
        ));
    }
    if desc
        .inputs
        .iter()
        .chain(&desc.outputs)
        .any(|t| t.numel() > u32::MAX as usize / 2)
    {
        return Support::No("an operand has more than 2^31 elements".into());
    }
    Support::Yes
}

/// linear with a quantized w: y[M, N] = x[M, K] · W[N, K]ᵀ.
pub fn record_linear(b: &WgpuBackend, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (x, w, y) = (i[0], i[1], o[0]);
    let (m, n) = (x.shape[0], w.shape[0]);
    if m == 0 || n == 0 {
        return Ok(());
    }
    let kind = match m <= MATVEC_MAX_M {
        true => match lanes(b, x, w)? {
            Lanes::LimbsWg => Kind::Matvec {
                sg: sg32(b),
                lanes: Lanes::LimbsWg,
            },
            l => Kind::Matvec {
                sg: b.caps.subgroup,
                lanes: l,
            },
        },
        false => Kind::Gemm,
    };
    launch_linear(b, kind, None, x, w, y)
}

/// The matvec lanes for x · Wᵀ. The vec4 lanes where the type has them, x is f32 starting on a
/// vec4 and every row of w starts on 16 bytes; for q4_k there, the integer-dot lanes for
/// matrices of at least LIMBS_WG_MIN elements and K >= 2048 (x limbs by the workgroup, or by a
/// pre-pass from LIMBS_PRE_MIN, or where x's limbs take more than one chunk of workgroup memory:
/// each chunk costs every workgroup a conversion and two barriers, and on the H200 K 14336 N 4096
/// (two chunks) ran 21.5-21.7 us from the pre-pass against 24.2-24.8 us, while every one-chunk
/// shape of 4M..70M elements ran faster by the workgroup, docs/runs/r11/e4.log). Else the scalar
/// words. For A/B sweeps and tests: `WGLLM_QMATVEC_V4=0` turns the vec4 and limb lanes off;
/// `WGLLM_QMV_LIMBS=0|pre|wg` the limb lanes off, or on whatever the size with x limbs from the
/// pre-pass / the workgroup.
fn lanes(b: &WgpuBackend, x: &Tensor, w: &Tensor) -> Result<Lanes> {
    let k = *w.shape.last().unwrap_or(&0);
    let rowb = w.dtype.nbytes(k);
    let off = std::env::var("WGLLM_QMATVEC_V4").is_ok_and(|v| v == "0");
    if off
        || v4_src(w.dtype).is_none()
        || x.dtype != DType::F32
        || x.offset % 4 != 0
        || wbase(w, "linear")? % 16 != 0
        || rowb % 16 != 0
    {
        return Ok(Lanes::Words);
    }
    let limbs = match std::env::var("WGLLM_QMV_LIMBS").ok().as_deref() {
        Some("0") => None,
        Some("pre") => Some(Lanes::Limbs),
        Some("wg") => Some(Lanes::LimbsWg),
        _ if k < 2048 || w.numel() < LIMBS_WG_MIN => None,
        _ if w.numel() < LIMBS_PRE_MIN && xs_one_chunk(b, k, w.shape[0]) => Some(Lanes::LimbsWg),
        _ => Some(Lanes::Limbs),
    };
    Ok(match limbs {
        Some(l) if w.dtype == DType::Q4K => l,
        _ => Lanes::V4,
    })
}

/// Threads and rows of a matvec workgroup. Swept on the H200 through Vulkan (WG 32..256, R 1..8,
/// U 1..4, K 1024..14336, N 1024..151936; docs/BENCHMARKS.md r7): one subgroup's worth of threads
/// and 4 rows was best or within a few % where there are enough rows (more rows: fewer
/// workgroups and more registers, no gain), but with few rows and long ones (N 4096, K 14336)
/// the GPU runs short of threads: the workgroup then doubles (up to 256) while fewer than ~10^5
/// threads run and each keeps at least 32 elements of the row.
/// `WGLLM_QMATVEC=WG,R` overrides it for sweeps (tools/bench/quant_ops.sh; read by matvec_plan).
fn matvec_shape(n: usize, k: usize) -> (u32, u32) {
    let r = if n >= 2048 { 4 } else { 2 };
    let mut wg = 32;
    while wg < 256 && n.div_ceil(r) * wg < 100_000 && k / (2 * wg) >= 32 {
        wg *= 2;
    }
    (wg as u32, r as u32)
}

/// A qmatvec workgroup's threads, rows and slots a trip: matvec_shape's and two a trip, except on
/// the pre-pass limb lanes (q4_k from 2^27 elements), swept again on the H200 with the kernels
/// unchecked (docs/runs/r11/e2.log, 24 shapes twice): where the workgroup stays at 32 threads
/// (many rows, K8192 N28672) 3 rows rather than 4 (48.6 us in both rounds against 50.9-54.1: fewer
/// registers a thread), and where it grew (few long rows, K28672 N8192) four slots a trip
/// (47.1-47.8 us against 48.6-49.9). `WGLLM_QMATVEC` and `WGLLM_QMV_U` override them.
fn matvec_plan(n: usize, k: usize, lanes: Lanes, u: Option<u32>) -> (u32, u32, u32) {
    if let Some((wg, r)) = shape_override() {
        return (wg, r, u.unwrap_or(2));
    }
    let (wg, r) = matvec_shape(n, k);
    let limbs = lanes == Lanes::Limbs;
    let r = if limbs && wg == 32 && r == 4 { 3 } else { r };
    (wg, r, u.unwrap_or(if limbs && wg > 32 { 4 } else { 2 }))
}

/// `WGLLM_QMATVEC=WG,R` (sweeps): WG a power of two in 32..=256, R in 1..=8; else None.
fn shape_override() -> Option<(u32, u32)> {
    let &[wg, r] = super::kernel::env_u32s("WGLLM_QMATVEC", 2)?.as_slice() else {
        return None;
    };
    (wg.is_power_of_two() && (32..=256).contains(&wg) && (1..=8).contains(&r)).then_some((wg, r))
}

/// Threads and rows of a workgroup of the qmatvec_xs entry (x limbs made in workgroup memory):
/// groups of 32 threads, each R rows. `WGLLM_QMATVEC=WG,R` overrides it for sweeps.
fn xs_shape(n: usize) -> (u32, u32) {
    if let Some(s) = shape_override() {
        return s;
    }
    // 8 groups; 8 rows a group where there are many rows (x converted once for 64 rows), else 4
    // (H200: K 4096 N 14336 and K 8192 N 28672 best at 8, K 14336 N 4096 at 4)
    (256, if n >= 8192 { 8 } else { 4 })
}

/// Elements of x a workgroup turns into limbs at a time (qmatvec_xs.wgsl KC): a multiple of 256
/// whose limbs (112 bytes a 32-element block) fit in the device's workgroup memory beside the
/// reduction's, the same for every chunk of a K.
fn xs_chunk(b: &WgpuBackend, k: usize, wg: u32, r: u32, sg: bool, cap: Option<usize>) -> usize {
    let red = if sg { 0 } else { (wg * r * 4) as usize };
    let fit = ((b.caps.max_workgroup_storage as usize).saturating_sub(red) / 112 * 32 / 256 * 256).max(256);
    let cap = cap.map_or(fit, |c| c.min(fit));
    let chunks = k.div_ceil(cap);
    k.div_ceil(chunks).div_ceil(256) * 256
}

/// Whether qmatvec_xs turns a K-long x row into limbs in one chunk (its default shape for N rows).
fn xs_one_chunk(b: &WgpuBackend, k: usize, n: usize) -> bool {
    let (wg, r) = xs_shape(n);
    xs_chunk(b, k, wg, r, sg32(b), None) >= k
}

/// qmatvec_xs's x limbs in workgroup memory slot-major (limbs.wgsl) rather than slot after slot:
/// `WGLLM_QMV_XS_LAYOUT=soa|aos` for A/B runs.
fn xs_soa() -> bool {
    !std::env::var("WGLLM_QMV_XS_LAYOUT").is_ok_and(|v| v == "aos")
}

/// Subgroups exactly 32 wide (qmatvec_xs sums a 32-thread group by shuffles).
fn sg32(b: &WgpuBackend) -> bool {
    b.caps.subgroup && b.caps.subgroup_min == 32 && b.caps.subgroup_max == 32
}

/// Sweep knobs: slots a trip U (`WGLLM_QMV_U`: 1, 2 (default: the kernel takes one a trip where
/// a row is not whole trips of two) or 4) and the lanes' roofline diagnostic (`WGLLM_QMV_DIAG`;
/// vec4 lanes: 1 the loads alone, no dequantization; 2 and no x loads; 3 (q8_0) and no scale
/// loads; q4_k's integer-dot lanes, bits: 1 the loads alone, 2 no x loads, q4_k_dp.wgsl):
/// wrong results, for "what the loads alone reach" lines in docs/BENCHMARKS.md, never for a real
/// run.
fn sweep_knobs() -> (Option<u32>, u32) {
    let u = std::env::var("WGLLM_QMV_U")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|u| [1, 2, 4].contains(u));
    let diag = std::env::var("WGLLM_QMV_DIAG")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|d| *d <= 3)
        .unwrap_or(0);
    if diag > 0 {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            eprintln!(
                "wgllm: WGLLM_QMV_DIAG={diag}: quantized matvec results are wrong on purpose (a roofline diagnostic)"
            )
        });
    }
    (u, diag)
}

fn launch_linear(
    b: &WgpuBackend,
    kind: Kind,
    shape: Option<(u32, u32)>,
    x: &Tensor,
    w: &Tensor,
    y: &Tensor,
) -> Result<()> {
    launch_linear_kc(b, kind, shape, None, x, w, y)
}

/// launch_linear, with qmatvec_xs's chunk of x at most `kc_cap` elements where given (tests: a K
/// of several chunks).
fn launch_linear_kc(
    b: &WgpuBackend,
    kind: Kind,
    shape: Option<(u32, u32)>,
    kc_cap: Option<usize>,
    x: &Tensor,
    w: &Tensor,
    y: &Tensor,
) -> Result<()> {
    let (m, k, n) = (x.shape[0], x.shape[1], w.shape[0]);
    for t in [x, y] {
        if t.offset + t.numel() + 4 > u32::MAX as usize {
            return Err(Error::Other(format!("linear: {t:?} reaches past u32 element indices")));
        }
    }
    let x_aligned = x.dtype == DType::F32 || x.offset % 2 == 0;
    let mut consts = vec![
        ("X_KIND", format!("{}u", x_kind(x.dtype))),
        ("X_ALIGNED", x_aligned.to_string()),
    ];
    let (entry, groups, variant) = match kind {
        Kind::Matvec {
            sg,
            lanes: Lanes::LimbsWg,
        } => {
            let (wg, r) = shape.unwrap_or_else(|| xs_shape(n));
            let (u, diag) = sweep_knobs();
            let u = u.unwrap_or(2);
            let kc = xs_chunk(b, k, wg, r, sg, kc_cap);
            let soa = xs_soa();
            consts.extend([
                ("WG", format!("{wg}u")),
                ("R", format!("{r}u")),
                ("U", format!("{}u", u.min(2))),
                ("KC", format!("{kc}u")),
                ("DIAG", format!("{diag}u")),
                ("XS_SOA", soa.to_string()),
            ]);
            (
                "qmatvec_xs",
                n.div_ceil((wg / 32 * r) as usize) * m,
                format!(
                    "wg{wg}r{r}u{}kc{kc}d{diag}{}{}",
                    u.min(2),
                    if sg { "sg" } else { "" },
                    if soa { "s" } else { "" }
                ),
            )
        }
        Kind::Matvec { sg, lanes } => {
            let (u, diag) = sweep_knobs();
            let (wg, r, u) = match shape {
                Some((wg, r)) => (wg, r, u.unwrap_or(2)),
                None => matvec_plan(n, k, lanes, u),
            };
            consts.extend([
                ("WG", format!("{wg}u")),
                ("R", format!("{r}u")),
                ("U", format!("{u}u")),
                ("DIAG", format!("{diag}u")),
            ]);
            (
                "qmatvec",
                n.div_ceil(r as usize) * m,
                format!(
                    "wg{wg}r{r}u{u}d{diag}{}{}",
                    if sg { "sg" } else { "" },
                    match lanes {
                        Lanes::Limbs => "dp",
                        Lanes::V4 => "v4",
                        _ => "",
                    }
                ),
            )
        }
        Kind::Gemm => ("qgemm", m.div_ceil(64) * n.div_ceil(64), "t64".to_string()),
        Kind::Embed => unreachable!(),
    };
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    let key = KernelKey {
        entry,
        bindings: vec![
            match kind {
                Kind::Matvec {
                    lanes: Lanes::V4 | Lanes::LimbsWg,
                    ..
                } => read4("x", x.dtype),
                Kind::Matvec {
                    lanes: Lanes::Limbs, ..
                } => read4("x", DType::U32),
                _ => read("x", x.dtype),
            },
            read4("w", w.dtype),
            write("y", y.dtype),
        ],
        variant: format!("{variant}{}", if x_aligned { "a" } else { "" }),
    };
    let rowb = w.dtype.nbytes(k) as u32;
    let p = Params {
        offs: [0; 8],
        m: m as u32,
        n: n as u32,
        k: k as u32,
        wbase: wbase(w, "linear")?,
        rowb,
        first: 0,
        pad: [0; 2],
    };
    let xb = match kind {
        Kind::Matvec {
            lanes: Lanes::Limbs, ..
        } => x_limbs(b, x)?,
        _ => x.clone(),
    };
    b.dispatch(
        &key,
        body(kind, w.dtype),
        &consts,
        bytemuck::bytes_of(&p),
        &[&xb, w, y],
        grid(groups as u32),
    )
}

/// Records the xlimbs.wgsl pre-pass of an f32 x[M, K] (K % 64 == 0, starting on a vec4) into a
/// scratch buffer and returns it: LIMB_WORDS u32 words a 32-element block, the x operand of the
/// limb lanes.
fn x_limbs(b: &WgpuBackend, x: &Tensor) -> Result<Tensor> {
    #[repr(C)]
    #[derive(Clone, Copy, Pod, Zeroable)]
    struct P {
        offs: [u32; 8],
        blocks: u32,
        slots: u32,
        pad: [u32; 2],
    }
    let blocks = x.numel() / 32;
    let xl = b.scratch("x-limbs", DType::U32, blocks * LIMB_WORDS)?;
    let key = KernelKey {
        entry: "xlimbs",
        bindings: vec![read4("x", DType::F32), write("xl", DType::U32)],
        variant: String::new(),
    };
    let p = P {
        offs: [0; 8],
        blocks: blocks as u32,
        slots: (x.shape[1] / 64) as u32,
        pad: [0; 2],
    };
    static SRC: OnceLock<String> = OnceLock::new();
    let src = SRC.get_or_init(|| format!("{LIMBS}\n{XLIMBS}"));
    b.dispatch(
        &key,
        src,
        &[],
        bytemuck::bytes_of(&p),
        &[x, &xl],
        grid(blocks.div_ceil(64) as u32),
    )?;
    Ok(xl)
}

/// embedding / embedding_shard with a quantized table [V, D] (D a whole number of blocks).
pub fn record_embed(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let (table, ids, y) = (i[0], i[1], o[0]);
    let first = match op {
        Op::Embedding => 0,
        Op::EmbeddingShard { first } => *first,
        _ => unreachable!("quant::record_embed got {}", op.name()),
    };
    let (v, d) = (table.shape[0], table.shape[1]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    if first + v > u32::MAX as usize {
        return Err(Error::Other(format!(
            "embedding: vocabulary rows up to {} exceed u32",
            first + v
        )));
    }
    let shard = matches!(op, Op::EmbeddingShard { .. });
    let key = KernelKey {
        entry: "qembedding",
        bindings: vec![read4("w", table.dtype), read("ids", DType::U32), write("y", y.dtype)],
        variant: if shard { "shard".into() } else { String::new() },
    };
    let consts = [("WG", format!("{EMBED_WG}u")), ("SHARD", shard.to_string())];
    let rowb = table.dtype.nbytes(d) as u32;
    let p = Params {
        offs: [0; 8],
        m: ids.numel() as u32,
        n: v as u32,
        k: d as u32,
        wbase: wbase(table, "embedding")?,
        rowb,
        first: first as u32,
        pad: [0; 2],
    };
    let groups = (n.div_ceil(4) as u32).div_ceil(EMBED_WG);
    b.dispatch(
        &key,
        body(Kind::Embed, table.dtype),
        &consts,
        bytemuck::bytes_of(&p),
        &[table, ids, y],
        grid(groups),
    )
}

#[cfg(test)]
mod tests {
    //! What the harness's cases do not reach on llvmpipe: the workgroup-memory reduction where
    //! subgroups exist, other workgroup shapes, x at an odd 16-bit offset and w at a block offset;
    //! each against the CPU reference. And the contract's shape error.
    use super::*;
    use crate::backend::cpu::CpuBackend;
    use crate::backend::Backend;
    use crate::op::TensorDesc;
    use crate::parity::case::{input, Init};
    use crate::parity::compare::{compare, tolerance};

    fn check(
        b: &WgpuBackend,
        kind: Kind,
        shape: Option<(u32, u32)>,
        (xd, wd): (DType, DType),
        (m, k, n): (usize, usize, usize),
        (xo, wo): (usize, usize),
    ) {
        check_kc(b, kind, shape, None, (xd, wd), (m, k, n), (xo, wo));
    }

    fn check_kc(
        b: &WgpuBackend,
        kind: Kind,
        shape: Option<(u32, u32)>,
        kc: Option<usize>,
        (xd, wd): (DType, DType),
        (m, k, n): (usize, usize, usize),
        (xo, wo): (usize, usize),
    ) {
        let xi = input(
            xd,
            &[m, k],
            Init::Normal {
                seed: (m * 31 + k) as u64,
                std: 1.0,
            },
        );
        let wi = input(
            wd,
            &[n, k],
            Init::QuantBlocks {
                seed: (k * 13 + n) as u64,
            },
        );
        let cpu = CpuBackend::new();
        let (cx, cw, cy) = (
            cpu.alloc(xd, &[m, k]).unwrap(),
            cpu.alloc(wd, &[n, k]).unwrap(),
            cpu.alloc(DType::F32, &[m, n]).unwrap(),
        );
        cpu.upload(&cx, &xi.bytes()).unwrap();
        cpu.upload(&cw, &wi.bytes()).unwrap();
        cpu.run(&Op::Linear, &[&cx, &cw], &[&cy]).unwrap();
        let want = cpu.download(&cy).unwrap();
        let at = |d: DType, off: usize, shape: &[usize]| {
            b.alloc(d, &[off + shape.iter().product::<usize>() + 64])
                .unwrap()
                .view(off, shape)
                .unwrap()
        };
        let (gx, gw, gy) = (at(xd, xo, &[m, k]), at(wd, wo, &[n, k]), at(DType::F32, 3, &[m, n]));
        b.upload(&gx, &xi.bytes()).unwrap();
        b.upload(&gw, &wi.bytes()).unwrap();
        launch_linear_kc(b, kind, shape, kc, &gx, &gw, &gy).unwrap();
        b.flush().unwrap();
        let got = b.download(&gy).unwrap();
        let r = compare(DType::F32, &got, &want, tolerance("linear", DType::F32));
        assert!(
            r.is_ok(),
            "{kind:?} {shape:?} kc {kc:?} {xd}/{wd} {m}x{k}x{n} +{xo}/+{wo}: {}",
            r.unwrap_err()
        );
    }

    #[test]
    fn forced_variants_match_cpu() {
        let Some(b) = WgpuBackend::all().into_iter().next() else {
            eprintln!("no wgpu adapter: skipped");
            return;
        };
        for wd in DType::QUANTS {
            let qk = wd.block().0;
            // a block offset only where a view may start past block 0 (word-aligned blocks)
            let wo = if wd.block().1 % 4 == 0 { 3 * qk } else { 0 };
            for sg in [false, b.caps.subgroup] {
                for shape in [(32, 1), (64, 4), (128, 3), (32, 8), (64, 6)] {
                    check(
                        &b,
                        Kind::Matvec {
                            sg,
                            lanes: Lanes::Words,
                        },
                        Some(shape),
                        (DType::F32, wd),
                        (2, 3 * qk, 7),
                        (0, wo),
                    );
                    if v4_src(wd).is_some() {
                        // rows of whole 256-element groups, w 16-byte aligned (at a 256-element offset
                        // where views may start past block 0)
                        check(
                            &b,
                            Kind::Matvec { sg, lanes: Lanes::V4 },
                            Some(shape),
                            (DType::F32, wd),
                            (2, 512, 9),
                            (4, if wo > 0 { 256 } else { 0 }),
                        );
                    }
                    if wd == DType::Q4K {
                        check(
                            &b,
                            Kind::Matvec {
                                sg,
                                lanes: Lanes::Limbs,
                            },
                            Some(shape),
                            (DType::F32, wd),
                            (3, 768, 9),
                            (8, 256),
                        );
                        // x in chunks of 256 elements (three), and whole
                        for kc in [Some(256), None] {
                            check_kc(
                                &b,
                                Kind::Matvec {
                                    sg: sg && sg32(&b),
                                    lanes: Lanes::LimbsWg,
                                },
                                Some(shape),
                                kc,
                                (DType::F32, wd),
                                (3, 768, 37),
                                (8, 256),
                            );
                        }
                    }
                }
            }
            check(
                &b,
                Kind::Matvec {
                    sg: false,
                    lanes: Lanes::Words,
                },
                None,
                (DType::BF16, wd),
                (1, qk, 5),
                (2, wo),
            );
            check(&b, Kind::Gemm, None, (DType::F16, wd), (3, 2 * qk, 70), (6, wo));
        }
    }

    /// The pre-pass limb lanes' own plans (matvec_plan: 3 rows a 32-thread workgroup; four slots a
    /// trip in a wider one), each at a size that picks it, rows not a multiple of 3 included.
    #[test]
    fn limb_plans_match_cpu() {
        let Some(b) = WgpuBackend::all().into_iter().next() else {
            eprintln!("no wgpu adapter: skipped");
            return;
        };
        if shape_override().is_some() || std::env::var("WGLLM_QMV_U").is_ok() {
            eprintln!("WGLLM_QMATVEC / WGLLM_QMV_U set: the plans are overridden; skipped");
            return;
        }
        for ((k, n), plan) in [((2048, 12800), (32, 3, 2)), ((8192, 2048), (256, 4, 4))] {
            assert_eq!(matvec_plan(n, k, Lanes::Limbs, None), plan);
            check(
                &b,
                Kind::Matvec {
                    sg: b.caps.subgroup,
                    lanes: Lanes::Limbs,
                },
                None,
                (DType::F32, DType::Q4K),
                (1, k, n),
                (0, 0),
            );
        }
    }

    /// The limb entries' WGSL, subgroup forms included (lavapipe never compiles those: its
    /// subgroups are not 32 wide), validated by naga with every capability.
    #[test]
    fn limb_entries_validate() {
        use super::super::kernel::{generate, validate_wgsl};
        let consts: Vec<(&str, String)> = [
            ("X_KIND", "0u"),
            ("X_ALIGNED", "true"),
            ("WG", "256u"),
            ("R", "8u"),
            ("U", "2u"),
            ("KC", "1024u"),
            ("DIAG", "0u"),
            ("XS_SOA", "true"),
        ]
        .iter()
        .map(|(a, b)| (*a, b.to_string()))
        .collect();
        for (kind, entry) in [
            (
                Kind::Matvec {
                    sg: true,
                    lanes: Lanes::LimbsWg,
                },
                "qmatvec_xs",
            ),
            (
                Kind::Matvec {
                    sg: false,
                    lanes: Lanes::LimbsWg,
                },
                "qmatvec_xs",
            ),
            (
                Kind::Matvec {
                    sg: true,
                    lanes: Lanes::Limbs,
                },
                "qmatvec",
            ),
        ] {
            let bindings = vec![
                if kind
                    == (Kind::Matvec {
                        sg: true,
                        lanes: Lanes::Limbs,
                    })
                {
                    read4("x", DType::U32)
                } else {
                    read4("x", DType::F32)
                },
                read4("w", DType::Q4K),
                write("y", DType::F32),
            ];
            let key = KernelKey {
                entry,
                bindings,
                variant: String::new(),
            };
            let src = generate(&key, body(kind, DType::Q4K), &consts, &[]);
            validate_wgsl(entry, &src).unwrap();
        }
    }

    #[test]
    fn k_must_be_whole_blocks() {
        let d = OpDesc::new(
            Op::Linear,
            vec![
                TensorDesc::new(DType::F32, &[1, 100]),
                TensorDesc::new(DType::Q4K, &[3, 100]),
            ],
            vec![TensorDesc::new(DType::F32, &[1, 3])],
        );
        let e = d.check().unwrap_err().to_string();
        assert!(e.contains("q4_k") && e.contains("K = 100"), "{e}");
        let d = OpDesc::new(
            Op::Softmax,
            vec![TensorDesc::new(DType::Q8_0, &[1, 32])],
            vec![TensorDesc::new(DType::F32, &[1, 32])],
        );
        assert!(d.check().is_err());
    }
}
