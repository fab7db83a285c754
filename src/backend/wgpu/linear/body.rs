//! The generated WGSL of a linear plan: shaders/linear.wgsl (Params and the pair loaders) then
//! matvec.wgsl with its `//@` template lines unrolled for the plan's shape; or linear_coop.wgsl
//! with its own (coop.rs).
use super::coop::{coop_body, Coop};
use crate::backend::wgpu::shaders::{fill, select_sg};
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
/// The WGSL body of `plan` on `b`'s sources (shared prefix + kernel, generated lines filled
/// in), built once per (source set, plan, aligned, swiglu) and kept for the process (a handful of
/// plans per model). `aligned` and `swiglu` (its epilogue) matter to the coop kernel only.
pub(super) fn body(b: &WgpuBackend, plan: Plan, aligned: bool, swiglu: bool) -> &'static str {
    type Bodies = HashMap<(u64, Plan, bool, bool), &'static str>;
    static CACHE: OnceLock<Mutex<Bodies>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    let coop = matches!(plan, Plan::Coop(_));
    let (aligned, swiglu) = (aligned && coop, swiglu && coop);
    cache.entry((b.sources_id(), plan, aligned, swiglu)).or_insert_with(|| {
        let src = match plan {
            Plan::Matvec { r, mr, u, sg, .. } => {
                format!("{}\n{}", b.source("linear.wgsl"), matvec_body(b, r, mr, u, sg))
            }
            Plan::Coop(c) => coop_body(b.source("linear_coop.wgsl"), c, aligned, swiglu),
        };
        Box::leak(src.into_boxed_str())
    })
}

/// shaders/matvec.wgsl with its `//@` lines unrolled over r < R, i < MR, u < U.
fn matvec_body(b: &WgpuBackend, r: u32, mr: u32, u: u32, sg: bool) -> String {
    let (rs, is) = (0..r, 0..mr);
    let accs = || rs.clone().flat_map(|r| is.clone().map(move |i| (r, i)));
    let mut decl = String::new();
    for r in rs.clone() {
        decl += &format!("let wr{r} = p.offs[0].y + min(n0 + {r}u, p.n - 1u) * p.k;\n");
    }
    for i in is.clone() {
        decl += &format!("let xr{i} = p.offs[0].x + min(m0 + {i}u, p.m - 1u) * p.k;\n");
    }
    for (r, i) in accs() {
        decl += &format!("var a{r}_{i} = 0.0;\n");
    }
    let trip = |steps: u32| {
        let mut c = String::new();
        for s in 0..steps {
            c += &format!("let e{s} = 2u * (j + {s}u * WG);\n");
            for i in is.clone() {
                c += &format!("let x{s}_{i} = x_pair(xr{i} + e{s});\n");
            }
            for r in rs.clone() {
                c += &format!("let w{s}_{r} = w_pair(wr{r} + e{s});\n");
            }
        }
        for (r, i) in accs() {
            let terms: Vec<String> = (0..steps).map(|s| format!("dot(x{s}_{i}, w{s}_{r})")).collect();
            c += &format!("a{r}_{i} += {};\n", terms.join(" + "));
        }
        c
    };
    let mut odd = String::new();
    for r in rs.clone() {
        odd += &format!("let wl{r} = ld_w(min(n0 + {r}u, p.n - 1u) * p.k + kl);\n");
    }
    for (r, i) in accs() {
        odd += &format!("a{r}_{i} += x_one(min(m0 + {i}u, p.m - 1u) * p.k + kl) * wl{r};\n");
    }
    let mut to_red = String::new();
    for (r, i) in accs() {
        let slot = (r * mr + i) as usize;
        to_red += &if sg {
            format!("{{ let s = sg_sum(a{r}_{i}, sgs); if (sgi == 0u) {{ red[{slot}u * STRIDE + sgid] = s; }} }}\n")
        } else {
            format!("red[{slot}u * STRIDE + lid] = a{r}_{i};\n")
        };
    }
    let parts = [
        ("decl", decl),
        ("trip_U", trip(u)),
        ("trip_1", trip(1)),
        ("odd", odd),
        ("to_red", to_red),
    ];
    fill(
        &format!(
            "{}{}",
            if sg { b.source("sg_sum.wgsl") } else { "" },
            select_sg(b.source("matvec.wgsl"), sg)
        ),
        &parts,
    )
}
