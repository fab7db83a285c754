//! Recording a quantized linear: the kernel's WGSL body from the device's sources, its
//! constants and key for a plan, and the xlimbs.wgsl pre-pass where the lanes need it.
use super::plan::{matvec_plan, xs_chunk, xs_shape, Kind, Lanes};
use super::{x_kind, Params, LIMB_WORDS};
use crate::backend::wgpu::kernel::{grid, read, read4, write, write4, KernelKey};
use crate::backend::wgpu::shaders::{select, select_sg};
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

/// Where a matvec's lanes read x from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum XIn {
    /// x as given (qx_v4.wgsl, qx_words.wgsl)
    Given,
    /// The rows of a residual add + RMSNorm (qx_norm.wgsl; `add`: a + b, whose sum is stored,
    /// else a alone), a, b and nw read element by element
    Norm { add: bool },
    /// The same on the vec4 lanes with a, b, nw and sum f32 starting on 16 bytes: 16-byte loads
    /// and stores (qx_norm.wgsl's `nv4` variant)
    NormV4 { add: bool },
}

impl XIn {
    /// Whether x is a + b (qx_norm.wgsl's `nadd` lines)
    fn adds(self) -> bool {
        matches!(self, XIn::Norm { add: true } | XIn::NormV4 { add: true })
    }
}

/// The WGSL body (common + type + entry) on `b`'s sources, built once per (source set, kind,
/// dtype, x, radd) for the process.
pub(super) fn body(b: &WgpuBackend, kind: Kind, d: DType, xin: XIn, radd: bool) -> &'static str {
    type Bodies = HashMap<(u64, Kind, DType, XIn, bool), &'static str>;
    static CACHE: OnceLock<Mutex<Bodies>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache
        .entry((b.sources_id(), kind, d, xin, radd))
        .or_insert_with(|| Box::leak(build_body(&|name| b.source(name), kind, d, xin, radd).into_boxed_str()))
}

/// The WGSL body of `kind` for dtype `d` from the shader files `s` gives by name; `xin` says
/// where the matvec's lanes read x (normed rows: the vec4 or word lanes only, the vec4 loads of
/// a, b and nw on the vec4 lanes only); with `radd` (linear_add, the qmatvec entry) each output
/// adds the residual at its index.
pub(super) fn build_body<'a>(s: &dyn Fn(&str) -> &'a str, kind: Kind, d: DType, xin: XIn, radd: bool) -> String {
    let (ty, extra) = type_src(d);
    let (qdots, matvec) = (s("qdots.wgsl"), s("qmatvec.wgsl"));
    let norm = xin != XIn::Given;
    // where the lanes read x: as given, or normed rows
    let x = |given: &'a str| if norm { s("qx_norm.wgsl") } else { s(given) };
    let entry = match kind {
        Kind::Matvec { sg, lanes } => {
            assert!(
                !norm || matches!(lanes, Lanes::Words | Lanes::V4),
                "quant: normed x on {lanes:?} lanes"
            );
            assert!(
                !matches!(xin, XIn::NormV4 { .. }) || lanes == Lanes::V4,
                "quant: 16-byte normed x on {lanes:?} lanes"
            );
            assert!(!radd || lanes != Lanes::LimbsWg, "quant: qmatvec_xs adds no residual");
            let src = match lanes {
                Lanes::Words => format!("{}\n{}\n{qdots}\n{matvec}", x("qx_words.wgsl"), s("qlanes.wgsl")),
                Lanes::V4 => format!("{}\n{}\n{qdots}\n{matvec}", x("qx_v4.wgsl"), s(v4_src(d))),
                Lanes::Limbs => format!("{XLIMB_BOUND}{}\n{qdots}\n{matvec}", s("q4_k_dp.wgsl")),
                Lanes::LimbsWg => format!(
                    "{}\n{}\n{qdots}\n{}",
                    s("limbs.wgsl"),
                    s("q4_k_dp.wgsl"),
                    s("qmatvec_xs.wgsl")
                ),
            };
            let src = select(&select_sg(&src, sg), "norm", norm);
            let src = select(&src, "nv4", matches!(xin, XIn::NormV4 { .. }));
            let src = select(&select(&src, "nadd", xin.adds()), "radd", radd);
            match sg {
                true => format!("{}\n{src}", s("sg_sum.wgsl")),
                false => src,
            }
        }
        Kind::Embed => s("qembed.wgsl").to_string(),
    };
    format!("{}\n{extra}{}\n{entry}", s("qcommon.wgsl"), s(ty))
}

/// add_rms_norm_linear's and rms_norm_linear's operands besides x (a) and W: the matvec reads x
/// as rms_norm(a + b, nw) and stores a + b into `sum`, or as rms_norm(a, nw) (qx_norm.wgsl).
pub(super) struct QNorm<'a> {
    pub eps: f32,
    pub unit_offset: bool,
    pub nw: &'a Tensor,
    /// (b, sum) where x is a + b (add_rms_norm_linear), None where it is a (rms_norm_linear)
    pub add: Option<(&'a Tensor, &'a Tensor)>,
}

impl QNorm<'_> {
    /// How lanes `lanes` read the normed rows of a: 16 bytes at a time on the vec4 lanes where
    /// a, b, nw and sum are f32 and each starts on 16 bytes (a vec4 of x three loads, not
    /// twelve), else element by element.
    pub(super) fn xin(&self, lanes: Lanes, a: &Tensor) -> XIn {
        let v4 = |t: &Tensor| t.dtype == DType::F32 && t.offset % 4 == 0;
        let add = self.add.is_some();
        let summed = self.add.into_iter().flat_map(|(b, sum)| [b, sum]);
        match lanes == Lanes::V4 && [a, self.nw].into_iter().chain(summed).all(v4) {
            true => XIn::NormV4 { add },
            false => XIn::Norm { add },
        }
    }
}

/// Records y = x · Wᵀ through `kind`, in the workgroup shape of `plan.rs` unless `shape` gives
/// the threads and rows (tests), with qmatvec_xs's chunk of x at most `kc_cap` elements where
/// given (tests: a K of several chunks). With `swiglu` (the qmatvec entry, an even R) y [M, N / 2]
/// is the swiglu of each (gate, up) pair of outputs; with `norm`, x is the rows of a residual
/// add + RMSNorm (add_rms_norm_linear; the vec4 or word lanes).
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
    norm: Option<&QNorm>,
    radd: Option<&Tensor>,
) -> Result<()> {
    let (m, k, n) = (x.shape[0], x.shape[1], w.shape[0]);
    let x_aligned = x.dtype == DType::F32 || x.offset % 2 == 0;
    let mut consts = vec![
        ("X_KIND", format!("{}u", x_kind(x.dtype))),
        ("X_ALIGNED", x_aligned.to_string()),
    ];
    let nw_offset = norm.is_some_and(|nm| nm.unit_offset);
    let xin = match (kind, norm) {
        (Kind::Matvec { lanes, .. }, Some(nm)) => nm.xin(lanes, x),
        _ => XIn::Given,
    };
    if norm.is_some() {
        consts.push(("NW_OFFSET", nw_offset.to_string()));
    }
    let (entry, groups, variant) = match kind {
        Kind::Matvec {
            sg,
            lanes: Lanes::LimbsWg,
        } => {
            if swiglu || radd.is_some() {
                return Err(Error::Other(
                    "linear_swiglu, linear_add: qmatvec_xs has no swiglu or residual epilogue".into(),
                ));
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
            // the normed rows' sum of squares takes the slot after the R rows' sums (of 8)
            if norm.is_some() && r >= 8 {
                return Err(Error::Other(format!(
                    "add_rms_norm_linear: {r} weight rows a workgroup (the fused matvec takes fewer than 8)"
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
                    "wg{wg}r{r}u{u}{}{}{}{}{}",
                    if sg { "sg" } else { "" },
                    match lanes {
                        Lanes::Limbs => "dp",
                        Lanes::V4 => "v4",
                        _ => "",
                    },
                    if swiglu { "so" } else { "" },
                    // (the norm weight's 1 + w is a constant of the kernel)
                    match xin {
                        XIn::Given => "",
                        XIn::Norm { .. } if nw_offset => "n1",
                        XIn::Norm { .. } => "n",
                        XIn::NormV4 { .. } if nw_offset => "n1v",
                        XIn::NormV4 { .. } => "nv",
                    },
                    match (xin, radd) {
                        (XIn::Norm { add: false } | XIn::NormV4 { add: false }, _) => "x",
                        (_, Some(_)) => "r",
                        _ => "",
                    }
                ),
            )
        }
        Kind::Embed => unreachable!(),
    };
    if groups > u32::MAX as usize {
        return Err(Error::Other(format!("linear: {groups} workgroups")));
    }
    let mut bindings = vec![
        match kind {
            // (normed rows: 16 bytes at a time or element by element, qx_norm.wgsl)
            _ if matches!(xin, XIn::NormV4 { .. }) => read4("x", x.dtype),
            _ if matches!(xin, XIn::Norm { .. }) => read("x", x.dtype),
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
    ];
    let mut p = Params::linear(x, w, y)?;
    let xb = match kind {
        Kind::Matvec {
            lanes: Lanes::Limbs, ..
        } => x_limbs(b, x)?,
        _ => x.clone(),
    };
    let mut tensors = vec![&xb, w, y];
    if let Some(r) = radd {
        bindings.push(read("r", r.dtype));
        tensors.push(r);
    }
    if let Some(nm) = norm {
        let v4 = matches!(xin, XIn::NormV4 { .. });
        type Bind = fn(&'static str, DType) -> crate::backend::wgpu::kernel::Binding;
        let (rd, wr): (Bind, Bind) = if v4 { (read4, write4) } else { (read, write) };
        match nm.add {
            Some((bb, sum)) => {
                bindings.extend([rd("b", bb.dtype), rd("nw", nm.nw.dtype), wr("sum", sum.dtype)]);
                tensors.extend([bb, nm.nw, sum]);
            }
            None => {
                bindings.push(rd("nw", nm.nw.dtype));
                tensors.push(nm.nw);
            }
        }
        p.pad[0] = nm.eps.to_bits();
    }
    let key = KernelKey {
        entry,
        bindings,
        variant: format!("{variant}{}", if x_aligned { "a" } else { "" }),
    };
    b.dispatch(
        &key,
        || (body(b, kind, w.dtype, xin, radd.is_some()).to_string(), consts.to_vec()),
        bytemuck::bytes_of(&p),
        &tensors,
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
