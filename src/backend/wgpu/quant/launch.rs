//! Recording a quantized linear: the kernel's WGSL body from the device's sources, its
//! constants and key for a plan, and the xlimbs.wgsl pre-pass where the lanes need it.
use super::plan::{matvec_plan, xs_chunk, xs_shape, Kind, Lanes};
use super::{x_kind, Params, LIMB_WORDS};
use crate::backend::wgpu::kernel::{grid, read, read4, write, KernelKey};
use crate::backend::wgpu::shaders::select_sg;
use crate::backend::wgpu::WgpuBackend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The limb lanes' x accessors where the pre-pass's buffer is bound as x.
const XLIMB_BOUND: &str = "fn xlimb(i: u32) -> vec4<u32> {\n    return x_v4[i];\n}\nfn xbase(xr: u32) -> u32 {\n    return p.offs[0].x / 4u + xr / 64u * 14u;\n}\nfn xstride() -> u32 {\n    return p.k / 64u;\n}\nfn xslot() -> u32 {\n    return 1u;\n}\n";

/// The type file of a quantized dtype and its extra constants.
pub(in crate::backend::wgpu) fn type_src(d: DType) -> (&'static str, &'static str) {
    match d {
        DType::Q8_0 => ("q8_0.wgsl", ""),
        DType::Q4_0 => ("q4_0.wgsl", "const IQ = false;\n"),
        DType::IQ4NL => ("q4_0.wgsl", "const IQ = true;\n"),
        DType::Q4_1 => ("q4_1.wgsl", ""),
        DType::Q4K => ("q4_k.wgsl", ""),
        DType::Q6K => ("q6_k.wgsl", ""),
        d => unreachable!("quant: {d} is not a block-quantized dtype"),
    }
}

/// The vec4 matvec lanes file of a dtype (plan.rs `has_v4`).
fn v4_src(d: DType) -> &'static str {
    match d {
        DType::Q8_0 => "q8_0_v4.wgsl",
        DType::Q4K => "q4_k_v4.wgsl",
        d => unreachable!("quant: {d} has no vec4 lanes"),
    }
}

/// The WGSL body (common + type + entry) on `b`'s sources, built once per (source set, kind,
/// dtype) for the process.
pub(super) fn body(b: &WgpuBackend, kind: Kind, d: DType) -> &'static str {
    static CACHE: OnceLock<Mutex<HashMap<(u64, Kind, DType), &'static str>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache
        .entry((b.sources_id(), kind, d))
        .or_insert_with(|| Box::leak(build_body(&|name| b.source(name), kind, d).into_boxed_str()))
}

/// The WGSL body of `kind` for dtype `d` from the shader files `s` gives by name.
pub(super) fn build_body<'a>(s: &dyn Fn(&str) -> &'a str, kind: Kind, d: DType) -> String {
    let (ty, extra) = type_src(d);
    let (qdots, matvec) = (s("qdots.wgsl"), s("qmatvec.wgsl"));
    let entry = match kind {
        Kind::Matvec { sg, lanes } => {
            let src = match lanes {
                Lanes::Words => format!("{}\n{qdots}\n{matvec}", s("qlanes.wgsl")),
                Lanes::V4 => format!("{}\n{qdots}\n{matvec}", s(v4_src(d))),
                Lanes::Limbs => format!("{XLIMB_BOUND}{}\n{qdots}\n{matvec}", s("q4_k_dp.wgsl")),
                Lanes::LimbsWg => format!(
                    "{}\n{}\n{qdots}\n{}",
                    s("limbs.wgsl"),
                    s("q4_k_dp.wgsl"),
                    s("qmatvec_xs.wgsl")
                ),
            };
            let src = select_sg(&src, sg);
            match sg {
                true => format!("{}\n{src}", s("sg_sum.wgsl")),
                false => src,
            }
        }
        Kind::Embed => s("qembed.wgsl").to_string(),
    };
    format!("{}\n{extra}{}\n{entry}", s("qcommon.wgsl"), s(ty))
}

/// Records y = x · Wᵀ through `kind`, in the workgroup shape of `plan.rs` unless `shape` gives
/// the threads and rows (tests), with qmatvec_xs's chunk of x at most `kc_cap` elements where
/// given (tests: a K of several chunks). With `swiglu` (the qmatvec entry, an even R) y [M, N / 2]
/// is the swiglu of each (gate, up) pair of outputs.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_linear(
    b: &WgpuBackend,
    kind: Kind,
    shape: Option<(u32, u32)>,
    kc_cap: Option<usize>,
    swiglu: bool,
    x: &Tensor,
    w: &Tensor,
    y: &Tensor,
) -> Result<()> {
    let (m, k, n) = (x.shape[0], x.shape[1], w.shape[0]);
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
            if swiglu {
                return Err(Error::Other("linear_swiglu: qmatvec_xs has no swiglu epilogue".into()));
            }
            let (wg, r) = shape.unwrap_or_else(|| xs_shape(n));
            // two slots a trip (the entry takes one where a row is not whole trips of two)
            let u = 2;
            let kc = xs_chunk(b, k, wg, r, sg, kc_cap);
            consts.extend([
                ("WG", format!("{wg}u")),
                ("R", format!("{r}u")),
                ("U", format!("{u}u")),
                ("KC", format!("{kc}u")),
            ]);
            (
                "qmatvec_xs",
                n.div_ceil((wg / 32 * r) as usize) * m,
                format!("wg{wg}r{r}u{u}kc{kc}{}", if sg { "sg" } else { "" }),
            )
        }
        Kind::Matvec { sg, lanes } => {
            let (wg, r, u) = match shape {
                Some((wg, r)) => (wg, r, 2),
                None => matvec_plan(n, k, lanes),
            };
            if swiglu && (r % 2 != 0 || n % 2 != 0) {
                return Err(Error::Other(format!(
                    "linear_swiglu: {r} rows a workgroup over N = {n} split (gate, up) pairs"
                )));
            }
            consts.extend([
                ("WG", format!("{wg}u")),
                ("R", format!("{r}u")),
                ("U", format!("{u}u")),
                ("SWIGLU_OUT", swiglu.to_string()),
            ]);
            (
                "qmatvec",
                n.div_ceil(r as usize) * m,
                format!(
                    "wg{wg}r{r}u{u}{}{}{}",
                    if sg { "sg" } else { "" },
                    match lanes {
                        Lanes::Limbs => "dp",
                        Lanes::V4 => "v4",
                        _ => "",
                    },
                    if swiglu { "so" } else { "" }
                ),
            )
        }
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
    let p = Params::linear(x, w, y)?;
    let xb = match kind {
        Kind::Matvec {
            lanes: Lanes::Limbs, ..
        } => x_limbs(b, x)?,
        _ => x.clone(),
    };
    b.dispatch(
        &key,
        || (body(b, kind, w.dtype).to_string(), consts.to_vec()),
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
    static SRC: OnceLock<Mutex<HashMap<u64, &'static str>>> = OnceLock::new();
    let src = *SRC
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(b.sources_id())
        .or_insert_with(|| {
            Box::leak(format!("{}\n{}", b.source("limbs.wgsl"), b.source("xlimbs.wgsl")).into_boxed_str())
        });
    b.dispatch(
        &key,
        || (src.to_string(), vec![]),
        bytemuck::bytes_of(&p),
        &[x, &xl],
        grid(blocks.div_ceil(64) as u32),
    )?;
    Ok(xl)
}
