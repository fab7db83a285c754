//! The generated WGSL of a linear plan: shaders/linear.wgsl (Params and the pair loaders) then
//! matvec.wgsl with its `//@` template lines unrolled for the plan's shape; or linear_coop.wgsl
//! with its own (coop.rs).
use super::coop::{coop_body, Coop};
use crate::backend::wgpu::shaders::{fill, select, select_sg};
use crate::backend::wgpu::WgpuBackend;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A kernel and its shape parameters (each a different pipeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Plan {
    Matvec {
        wg: u32,
        r: u32,
        mr: u32,
        u: u32,
        sg: bool,
    },
    /// cooperative matrices (coop.rs; not picked by `plan` yet)
    Coop(Coop),
}

impl Plan {
    pub(super) fn variant(&self) -> String {
        match *self {
            Plan::Matvec { wg, r, mr, u, sg } => format!("wg{wg}r{r}m{mr}u{u}{}", if sg { "sg" } else { "" }),
            Plan::Coop(c) => c.variant(),
        }
    }
}
/// What a matvec reads as x and adds to its outputs besides the plain projection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Tail {
    /// x read as normed rows (matvec_norm.wgsl): Some(true) those of a + b, whose sum the first
    /// weight rows' workgroup stores (add_rms_norm_linear), Some(false) of a alone (rms_norm_linear)
    pub norm: Option<bool>,
    /// the residual r added to each output (linear_add: matvec.wgsl's `radd` lines)
    pub radd: bool,
}

/// The WGSL body of `plan` on `b`'s sources (shared prefix + kernel, generated lines filled
/// in), built once per (source set, plan, aligned, swiglu, tail) and kept for the process (a
/// handful of plans per model). `aligned` and `swiglu` (its epilogue) matter to the coop kernel
/// only, `tail` to the matvec.
pub(super) fn body(b: &WgpuBackend, plan: Plan, aligned: bool, swiglu: bool, tail: Tail) -> &'static str {
    type Bodies = HashMap<(u64, Plan, bool, bool, Tail), &'static str>;
    static CACHE: OnceLock<Mutex<Bodies>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    let coop = matches!(plan, Plan::Coop(_));
    let (aligned, swiglu) = (aligned && coop, swiglu && coop);
    let tail = if coop { Tail::default() } else { tail };
    cache
        .entry((b.sources_id(), plan, aligned, swiglu, tail))
        .or_insert_with(|| {
            let src = match plan {
                Plan::Matvec { r, mr, u, sg, .. } => {
                    let prefix = match tail.norm {
                        Some(add) => select(b.source("matvec_norm.wgsl"), "nadd", add),
                        None => String::new(),
                    };
                    format!(
                        "{}\n{prefix}\n{}",
                        b.source("linear.wgsl"),
                        matvec_body(b, r, mr, u, sg, tail)
                    )
                }
                Plan::Coop(c) => coop_body(b.source("linear_coop.wgsl"), c, aligned, swiglu),
            };
            Box::leak(src.into_boxed_str())
        })
}

/// shaders/matvec.wgsl with its `//@` lines unrolled over r < R, i < MR, u < U. With a norm
/// tail, x row i is rms_norm(a + b, nw) (add_rms_norm_linear) or rms_norm(a, nw)
/// (rms_norm_linear): each step loads the pair of a + b or a (`t`), weighs it by the norm weight
/// into the x pair, adds its squares to ss{i} (reduced after the outputs, sums ACC + i) and, for
/// a + b in the workgroup of the first weight rows, stores the sum; `y_of` scales each output by
/// its row's RMS factor. K is even there (no odd tail).
fn matvec_body(b: &WgpuBackend, r: u32, mr: u32, u: u32, sg: bool, tail: Tail) -> String {
    let norm = tail.norm.is_some();
    let (rs, is) = (0..r, 0..mr);
    let accs = || rs.clone().flat_map(|r| is.clone().map(move |i| (r, i)));
    let mut decl = String::new();
    for r in rs.clone() {
        decl += &format!("let wr{r} = p.offs[0].y + min(n0 + {r}u, p.n - 1u) * p.k;\n");
    }
    // the norm's loaders add the binding offsets themselves (ld_x, ld_b)
    let x_off = if norm { "" } else { "p.offs[0].x + " };
    for i in is.clone() {
        decl += &format!("let xr{i} = {x_off}min(m0 + {i}u, p.m - 1u) * p.k;\n");
        if norm {
            decl += &format!("var ss{i} = 0.0;\n");
        }
    }
    for (r, i) in accs() {
        decl += &format!("var a{r}_{i} = 0.0;\n");
    }
    let trip = |steps: u32| {
        let mut c = String::new();
        for s in 0..steps {
            c += &format!("let e{s} = 2u * (j + {s}u * WG);\n");
            if norm {
                c += &format!("let c{s} = nw_pair(e{s});\n");
            }
            for i in is.clone() {
                if norm {
                    c += &format!("let t{s}_{i} = sum_pair(xr{i} + e{s});\n");
                    c += &format!("let x{s}_{i} = t{s}_{i} * c{s};\n");
                } else {
                    c += &format!("let x{s}_{i} = x_pair(xr{i} + e{s});\n");
                }
            }
            for r in rs.clone() {
                c += &format!("let w{s}_{r} = w_pair(wr{r} + e{s});\n");
            }
        }
        for (r, i) in accs() {
            let terms: Vec<String> = (0..steps).map(|s| format!("dot(x{s}_{i}, w{s}_{r})")).collect();
            c += &format!("a{r}_{i} += {};\n", terms.join(" + "));
        }
        if norm {
            for i in is.clone() {
                let terms: Vec<String> = (0..steps).map(|s| format!("dot(t{s}_{i}, t{s}_{i})")).collect();
                c += &format!("ss{i} += {};\n", terms.join(" + "));
            }
            if tail.norm == Some(true) {
                c += "if (n0 == 0u) {\n";
                for s in 0..steps {
                    for i in is.clone() {
                        c += &format!(
                            "    st_sum(xr{i} + e{s}, t{s}_{i}.x);\n    st_sum(xr{i} + e{s} + 1u, t{s}_{i}.y);\n"
                        );
                    }
                }
                c += "}\n";
            }
        }
        c
    };
    let mut odd = String::new();
    if !norm {
        for r in rs.clone() {
            odd += &format!("let wl{r} = ld_w(min(n0 + {r}u, p.n - 1u) * p.k + kl);\n");
        }
        for (r, i) in accs() {
            odd += &format!("a{r}_{i} += x_one(min(m0 + {i}u, p.m - 1u) * p.k + kl) * wl{r};\n");
        }
    }
    let mut to_red = String::new();
    let sums = accs()
        .map(|(r, i)| (format!("a{r}_{i}"), r * mr + i))
        .chain(is.clone().filter(|_| norm).map(|i| (format!("ss{i}"), r * mr + i)));
    for (v, slot) in sums {
        to_red += &if sg {
            format!("{{ let s = sg_sum({v}, sgs); if (sgi == 0u) {{ red[{slot}u * STRIDE + sgid] = s; }} }}\n")
        } else {
            format!("red[{slot}u * STRIDE + lid] = {v};\n")
        };
    }
    let y_of = if norm {
        "fn y_of(a: u32, i: u32) -> f32 { return red[a * STRIDE] * norm_scale(red[(ACC + i) * STRIDE]); }"
    } else {
        "fn y_of(a: u32, i: u32) -> f32 { return red[a * STRIDE]; }"
    };
    let parts = [
        ("decl", decl),
        ("trip_U", trip(u)),
        ("trip_1", trip(1)),
        ("odd", odd),
        ("to_red", to_red),
        ("y_of", y_of.to_string()),
    ];
    fill(
        &format!(
            "{}{}",
            if sg { b.source("sg_sum.wgsl") } else { "" },
            select(&select_sg(b.source("matvec.wgsl"), sg), "radd", tail.radd)
        ),
        &parts,
    )
}
