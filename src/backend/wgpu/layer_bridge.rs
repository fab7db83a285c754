//! layer_bridge: a lone decode step's o, gate/up and down projections and the next layer's q/k/v
//! projection in one dispatch (shaders/layer_bridge.wgsl), the workgroups meeting at grid
//! barriers between them. Every workgroup must be resident at once for a barrier to pass, so the
//! kernel runs on `Tuning::grid_groups` workgroups and is refused where that is not known. This
//! file plans each phase's rows (which rows a workgroup owns, how a row's words spread over its
//! threads, how many rows a chunk holds in registers) and generates the straight-line loads and
//! dots over named registers: a private array indexed in a loop lands in slow local memory
//! wherever the compiler does not unroll the loop.
use super::kernel::{atomic, read, read4, write, Binding, KernelKey};
use super::{Support, WgpuBackend};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;
use bytemuck::{Pod, Zeroable};
use std::fmt::Write;

const WG: usize = 256;
/// Registers (16-byte words) a thread holds of a chunk's rows at most.
const REGS: usize = 16;
/// Rows a chunk at most (`red` holds 32 subgroup sums a row).
const CHUNK_ROWS: usize = 64;

/// How a phase's N rows of K 16-bit weights spread over `groups` workgroups of WG threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Phase {
    n: usize,
    /// words (8 weights) a row
    kv: usize,
    /// rows a workgroup
    rp: usize,
    /// threads a row, words a thread a row, rows a pass (WG / TPR)
    tpr: usize,
    wpt: usize,
    rs: usize,
    /// passes a chunk, rows a chunk, chunks
    pc: usize,
    cr: usize,
    nch: usize,
}

impl Phase {
    /// None where K is no whole number of words or a row's threads are fewer than a subgroup.
    fn plan(n: usize, k: usize, groups: usize, sg: usize, pairs: bool) -> Option<Phase> {
        if k % 8 != 0 || k == 0 || n == 0 {
            return None;
        }
        let kv = k / 8;
        let tpr = 1 << kv.trailing_zeros().min(WG.trailing_zeros());
        if tpr < sg {
            return None;
        }
        let (wpt, rs) = (kv / tpr, WG / tpr);
        let step = if pairs { rs.max(2) } else { rs };
        let rp = n.div_ceil(groups).div_ceil(step) * step;
        let mut pc = (rp / rs).min((REGS / wpt).max(1)).min((CHUNK_ROWS / rs).max(1));
        if pairs && (pc * rs) % 2 != 0 {
            pc += 1;
        }
        let cr = pc * rs;
        Some(Phase {
            n,
            kv,
            rp,
            tpr,
            wpt,
            rs,
            pc,
            cr,
            nch: rp.div_ceil(cr),
        })
    }

    /// N_X, RP_X, CR_X, NCH_X, TPR_X under `names` (phase X's).
    fn consts(&self, names: [&'static str; 5], out: &mut Vec<(&'static str, String)>) {
        for (k, v) in names.into_iter().zip([self.n, self.rp, self.cr, self.nch, self.tpr]) {
            out.push((k, format!("{v}u")));
        }
    }

    /// load_{x}(g, v, ch) and dot_{x}(v, sgi, sgs) over registers r{j}_{i}; `slot` is the
    /// weight binding's place in Params.offs.
    fn code(&self, x: &str, w: &str, slot: usize, s: &mut String) {
        let (tpr, kv, rs) = (self.tpr, self.kv, self.rs);
        let lx = x.to_lowercase();
        let _ = writeln!(s, "fn load_{lx}(g: u32, v: u32, ch: u32) {{");
        let _ = writeln!(s, "    let c = v % {tpr}u;");
        let _ = writeln!(s, "    let w0 = p.offs[{}u][{}u] / 8u + c;", slot / 4, slot % 4);
        let _ = writeln!(s, "    let base = g * RP_{x} + ch * CR_{x} + v / {tpr}u;");
        let _ = writeln!(s, "    let lim = min(g * RP_{x} + RP_{x}, N_{x});");
        for j in 0..self.pc {
            let _ = writeln!(s, "    if (base + {}u < lim) {{", j * rs);
            let _ = writeln!(s, "        let at = w0 + (base + {}u) * {kv}u;", j * rs);
            for i in 0..self.wpt {
                let _ = writeln!(s, "        r{j}_{i} = {w}_v4[at + {}u];", i * tpr);
            }
            let _ = writeln!(s, "    }} else {{");
            for i in 0..self.wpt {
                let _ = writeln!(s, "        r{j}_{i} = vec4<u32>();");
            }
            let _ = writeln!(s, "    }}");
        }
        let _ = writeln!(s, "}}\n");
        let _ = writeln!(s, "fn dot_{lx}(v: u32, sgi: u32, sgs: u32) {{");
        let _ = writeln!(s, "    let c = v % {tpr}u;");
        let _ = writeln!(s, "    let r = v / {tpr}u;");
        for j in 0..self.pc {
            let terms: Vec<String> = (0..self.wpt)
                .map(|i| format!("dot8(r{j}_{i}, c + {}u)", i * tpr))
                .collect();
            let _ = writeln!(s, "    {{");
            let _ = writeln!(s, "        let y = sg_sum({}, sgs);", terms.join(" + "));
            let _ = writeln!(
                s,
                "        if (sgi == 0u) {{ red[({}u + r) * 32u + c / sgs] = y; }}",
                j * rs
            );
            let _ = writeln!(s, "    }}");
        }
        let _ = writeln!(s, "}}\n");
    }
}

/// The four phases of a bridge for att [1, A], x [1, D], F gate/up pairs, N q/k/v rows.
fn phases(a: usize, d: usize, f: usize, n: usize, groups: usize, sg: usize) -> Option<[Phase; 4]> {
    Some([
        Phase::plan(d, a, groups, sg, false)?,
        Phase::plan(2 * f, d, groups, sg, true)?,
        Phase::plan(d, f, groups, sg, false)?,
        Phase::plan(n, d, groups, sg, false)?,
    ])
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [[u32; 4]; 3],
    eps: f32,
    _pad: [u32; 3],
}

const NAMES: [&str; 4] = ["O", "GU", "DN", "QKV"];
const CONSTS: [[&str; 5]; 4] = [
    ["N_O", "RP_O", "CR_O", "NCH_O", "TPR_O"],
    ["N_GU", "RP_GU", "CR_GU", "NCH_GU", "TPR_GU"],
    ["N_DN", "RP_DN", "CR_DN", "NCH_DN", "TPR_DN"],
    ["N_QKV", "RP_QKV", "CR_QKV", "NCH_QKV", "TPR_QKV"],
];
/// The weight bindings' names and places (binding order: att, x, pnw, nnw, wo, wgu, wdn, wqkv, xo,
/// qkv, sc).
const WEIGHTS: [(&str, usize); 4] = [("wo", 4), ("wgu", 5), ("wdn", 6), ("wqkv", 7)];

pub fn supports(b: &WgpuBackend, desc: &OpDesc) -> Support {
    let i = &desc.inputs;
    let groups = b.tuning.grid_groups;
    if groups == 0 {
        return Support::No(format!(
            "its workgroups wait for each other at grid barriers, and how many this adapter runs at once is not \
             known ({}: set WGLLM_GRID_GROUPS)",
            b.name()
        ));
    }
    if !b.caps.subgroup || b.caps.subgroup_min != b.caps.subgroup_max {
        return Support::No("the bridge sums a row's words in subgroups of one fixed size".into());
    }
    if i[0].shape[0] != 1 {
        return Support::No(format!("{} rows: the bridge is a lone decode step's", i[0].shape[0]));
    }
    let w16 = [i[2].dtype, i[4].dtype, i[5].dtype, i[7].dtype];
    if !(w16.iter().all(|&d| d == DType::BF16) || w16.iter().all(|&d| d == DType::F16)) {
        return Support::No(format!("weights must be all bf16 or all f16, got {w16:?}"));
    }
    let f32s = [i[0].dtype, i[1].dtype, desc.outputs[0].dtype, desc.outputs[1].dtype];
    if f32s != [DType::F32; 4] || i[3].dtype.is_quant() || i[6].dtype.is_quant() {
        return Support::No("att, x, xo and qkv must be f32 and the norm weights float".into());
    }
    let (a, d, f, n) = (i[0].shape[1], i[1].shape[1], i[4].shape[0] / 2, i[7].shape[0]);
    if phases(a, d, f, n, groups, b.caps.subgroup_max as usize).is_none() {
        return Support::No(format!(
            "A {a}, D {d}, F {f}: each reduction length must be a whole number of 8-element words, \
             a power-of-two share of them at least a subgroup"
        ));
    }
    let xs = 4 * a.max(d).max(f);
    if xs + 4 * 32 * CHUNK_ROWS + 4 * 33 > b.caps.max_workgroup_storage as usize {
        return Support::No(format!("{xs} bytes of staged x exceed the workgroup memory"));
    }
    Support::Yes
}

pub fn record(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
    let Op::LayerBridge { eps, unit_offset } = *op else {
        unreachable!()
    };
    let groups = b.tuning.grid_groups;
    let (a, d, f, n) = (i[0].shape[1], i[1].shape[1], i[4].shape[0] / 2, i[7].shape[0]);
    let ph = phases(a, d, f, n, groups, b.caps.subgroup_max as usize)
        .ok_or_else(|| Error::Other("layer_bridge: shapes the kernel does not take".into()))?;
    for (w, t) in ["wo", "wgu", "wdn", "wqkv"].into_iter().zip([i[2], i[4], i[5], i[7]]) {
        if t.offset % 8 != 0 {
            return Err(Error::Other(format!(
                "layer_bridge: {w} starts at element {}, not a 16-byte word",
                t.offset
            )));
        }
    }
    let sc = b.scratch("layer-bridge", DType::U32, 4 + 2 * d + f)?;
    let bindings: Vec<Binding> = vec![
        read("att", i[0].dtype),
        read("x", i[1].dtype),
        read("pnw", i[3].dtype),
        read("nnw", i[6].dtype),
        read4("wo", i[2].dtype),
        read4("wgu", i[4].dtype),
        read4("wdn", i[5].dtype),
        read4("wqkv", i[7].dtype),
        write("xo", o[0].dtype),
        write("qkv", o[1].dtype),
        atomic("sc"),
    ];
    let f16 = i[2].dtype == DType::F16;
    let key = KernelKey {
        entry: "layer_bridge",
        bindings,
        // the shapes are constants of the kernel (its row plans): each its own pipeline
        variant: format!("a{a}d{d}f{f}n{n}g{groups}{}", if unit_offset { "u" } else { "" }),
    };
    let source = || {
        let mut gen = String::new();
        let (pc, wpt) = (
            ph.iter().map(|p| p.pc).max().unwrap(),
            ph.iter().map(|p| p.wpt).max().unwrap(),
        );
        for j in 0..pc {
            for k in 0..wpt {
                let _ = writeln!(gen, "var<private> r{j}_{k}: vec4<u32>;");
            }
        }
        for ((p, x), (w, slot)) in ph.iter().zip(NAMES).zip(WEIGHTS) {
            p.code(x, w, slot, &mut gen);
        }
        let body = format!(
            "{}\n{}",
            b.source("sg_sum.wgsl"),
            b.source("layer_bridge.wgsl").replace("//@generated", &gen)
        );
        let mut consts = vec![
            ("WG", format!("{WG}u")),
            ("G", format!("{groups}u")),
            ("D", format!("{d}u")),
            ("KA", format!("{a}u")),
            ("F", format!("{f}u")),
            ("XS", format!("{}u", a.max(d).max(f))),
            ("RED", format!("{}u", 32 * ph.iter().map(|p| p.cr).max().unwrap())),
            ("W_F16", f16.to_string()),
            ("NW_OFFSET", unit_offset.to_string()),
        ];
        for (p, names) in ph.iter().zip(CONSTS) {
            p.consts(names, &mut consts);
        }
        (body, consts)
    };
    let p = Params {
        offs: [[0; 4]; 3],
        eps,
        _pad: [0; 3],
    };
    let tensors = [i[0], i[1], i[3], i[6], i[2], i[4], i[5], i[7], o[0], o[1], &sc];
    b.dispatch(&key, source, bytemuck::bytes_of(&p), &tensors, (groups as u32, 1, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_cover_their_rows() {
        // Qwen3-0.6B's bridge over 2 and 132 workgroups, subgroups of 8 and 32
        for (groups, sg) in [(2, 8), (132, 32), (264, 32), (1, 8)] {
            let ph = phases(2048, 1024, 3072, 4096, groups, sg).unwrap();
            for (p, n) in ph.iter().zip([1024, 6144, 1024, 4096]) {
                assert!(p.rp * groups >= n, "{p:?}");
                assert!(
                    p.cr * p.nch >= p.rp && p.kv == p.tpr * p.wpt && p.rs * p.tpr == WG,
                    "{p:?}"
                );
                assert!(p.pc * p.wpt <= REGS.max(p.wpt), "{p:?}");
            }
            assert_eq!((ph[1].rp % 2, ph[1].cr % 2), (0, 0));
        }
        assert!(Phase::plan(64, 12, 2, 8, false).is_none());
    }
}
