//! The prefill tile of attention and gated_attention: the shape (`Tile`, chosen from attention.rs'
//! `TILES`) and shaders/attention_prefill_loop.wgsl with its `//@` lines filled in for it, as
//! straight-line code over scalar registers: naga does not unroll loops, and a private array
//! indexed in a loop would sit in slow local memory.
use super::shaders::{fill, select_sg};
use super::WgpuBackend;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A prefill tile: NT threads, BQ query rows, BK keys a block, TN keys per thread in the score
/// tile (so CT = BK / TN threads across a score row's keys, RT = NT / CT across rows, each thread
/// TM = BQ / RT rows). The output tile: four rows and TV vec4 columns a thread. KP: keys a
/// partition (0: a query block's keys in one workgroup; else runs of KP keys in workgroups of
/// their own, merged after: attention.rs `parts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Tile {
    pub nt: usize,
    pub bq: usize,
    pub bk: usize,
    pub tn: usize,
    pub kp: usize,
}

impl Tile {
    fn ct(&self) -> usize {
        self.bk / self.tn
    }

    fn rt(&self) -> usize {
        self.nt / self.ct()
    }

    fn tm(&self) -> usize {
        self.bq / self.rt()
    }

    /// threads across the output's vec4 columns
    fn cv(&self) -> usize {
        self.nt / (self.bq / 4)
    }

    /// Whether the shape is one the loop computes: every thread a whole score micro-tile and a
    /// whole output row group, CT a power of two (the subgroup butterflies).
    #[cfg(test)]
    pub fn valid(&self) -> bool {
        let ct = self.bk / self.tn.max(1);
        self.tn > 0
            && self.bk % self.tn == 0
            && ct.is_power_of_two()
            && self.nt % ct == 0
            && self.bq % self.rt() == 0
            && self.bq % 4 == 0
            && self.nt % (self.bq / 4) == 0
            && self.bq <= self.nt
            && self.bk <= self.nt
            && self.kp % self.bk == 0
    }

    /// Workgroup memory of prefill_attend in bytes: q_s, kv_s, p_s (padded vec4 rows), a_s, red_s
    /// (counted also where the `sg` variant leaves it out).
    pub fn smem(&self, dh: usize) -> usize {
        let qs = dh / 4 + 1;
        16 * (self.bq + self.bk) * qs + 16 * self.bk * (self.bq / 4 + 1) + 4 * self.bq + 4 * self.bq * self.ct()
    }

    /// Whether `b` runs the `sg` variant: subgroups of at least CT invocations (so a row's threads
    /// share one), a whole number of them in the workgroup.
    pub fn sg(&self, b: &WgpuBackend) -> bool {
        let c = &b.caps;
        c.subgroup && c.subgroup_min as usize >= self.ct() && self.nt % (c.subgroup_max.max(1) as usize) == 0
    }

    pub fn variant(&self, dh: usize, sg: bool) -> String {
        let (nt, bq, bk, tn) = (self.nt, self.bq, self.bk, self.tn);
        let kp = if self.kp > 0 {
            format!("p{}", self.kp)
        } else {
            String::new()
        };
        format!("dh{dh}_n{nt}q{bq}k{bk}t{tn}{kp}{}", if sg { "sg" } else { "" })
    }

    /// The loop's constants besides DH4.
    pub fn consts(&self) -> Vec<(&'static str, String)> {
        [
            ("BQ", self.bq),
            ("BK", self.bk),
            ("NT", self.nt),
            ("CT", self.ct()),
            ("RT", self.rt()),
            ("CV", self.cv()),
            ("KP", self.kp),
        ]
        .into_iter()
        .map(|(n, v)| (n, format!("{v}u")))
        .collect()
    }
}

const XYZW: [char; 4] = ['x', 'y', 'z', 'w'];

/// `b`'s shaders/`file` for tile `t` at head_dim / 4 == `dh4`: attention_prefill_loop.wgsl or a
/// prefill kernel, its `sg` lines kept or dropped and its `//@` lines generated; once per
/// (source set, file, shape), kept for the process (a few shapes per model).
pub(super) fn prefill_source(b: &WgpuBackend, file: &'static str, t: Tile, dh4: usize, sg: bool) -> &'static str {
    type Sources = HashMap<(u64, &'static str, Tile, usize, bool), &'static str>;
    static CACHE: OnceLock<Mutex<Sources>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry((b.sources_id(), file, t, dh4, sg)).or_insert_with(|| {
        let src = select_sg(b.source(file), sg);
        let text = if file == "attention_prefill_loop.wgsl" {
            loop_body(&src, t, dh4, sg)
        } else {
            fill(&src, &prefetch(t, dh4))
        };
        Box::leak(text.into_boxed_str())
    })
}

/// A kernel's registers pf{r} for its share of a staged block (elements tid + r NT of BK x DH4):
/// their declarations, their loads (`block_elem`) and their stores into kv_s.
fn prefetch(t: Tile, dh4: usize) -> [(&'static str, String); 3] {
    let n = t.bk * dh4;
    let (mut decl, mut load, mut store) = (String::new(), String::new(), String::new());
    for r in 0..n.div_ceil(t.nt) {
        decl += &format!("var<private> pf{r}: vec4<f32>;\n");
        let (open, close) = match (r + 1) * t.nt > n {
            true => ("if (e < BK * DH4) { ", " }"),
            false => ("", ""),
        };
        let e = format!("let e = tid + {}u;", r * t.nt);
        load += &format!("{{ {e} {open}pf{r} = block_elem(which, k0, e, b);{close} }}\n");
        store += &format!("{{ {e} {open}kv_s[(e / DH4) * QS + e % DH4] = pf{r};{close} }}\n");
    }
    [("pf_decl", decl), ("pf_load", load), ("pf_store", store)]
}

/// `src` (attention_prefill_loop.wgsl after `select_sg`) with its `//@` lines generated for tile
/// `t` at head_dim / 4 == `dh4`.
fn loop_body(src: &str, t: Tile, dh4: usize, sg: bool) -> String {
    let (tm, tn, ct, rt, cv) = (t.tm(), t.tn, t.ct(), t.rt(), t.cv());
    let tv = dh4.div_ceil(cv);
    let rows = || 0..tm;
    let cells = || (0..tm).flat_map(move |a| (0..tn).map(move |c| (a, c)));
    let outs = || (0..4).flat_map(move |i| (0..tv).map(move |v| (i, v)));
    let mut init = String::new();
    for a in rows() {
        init += &format!(
            "let r{a} = ti + {}u;\nlet qr{a} = r{a} * QS;\nvar m{a} = NEG;\nvar l{a} = 0.0;\n",
            a * rt
        );
    }
    for c in 0..tn {
        init += &format!("let kr{c} = (tj + {}u) * QS;\n", c * ct);
    }
    for v in 0..tv {
        // a column past the row (head_dim / 4 not a multiple of CV) reads the last one; its
        // result is not stored
        init += &if (v + 1) * cv > dh4 {
            format!("let cv{v} = min(pc + {}u, DH4 - 1u);\n", v * cv)
        } else {
            format!("let cv{v} = pc + {}u;\n", v * cv)
        };
    }
    for (i, v) in outs() {
        init += &format!("var o{i}_{v} = vec4<f32>(0.0);\n");
    }
    let score_zero: String = cells().map(|(a, c)| format!("var s{a}_{c} = 0.0;\n")).collect();
    // head_dim in trips of `u` vec4s (each step its own block of loads, then the dots)
    let u = [4, 2, 1].into_iter().find(|u| dh4 % u == 0).unwrap();
    let mut score = format!("for (var d4 = 0u; d4 < DH4; d4 += {u}u) {{\n");
    for step in 0..u {
        score += &format!("    {{\n        let d = d4 + {step}u;\n");
        for c in 0..tn {
            score += &format!("        let kk{c} = kv_s[kr{c} + d];\n");
        }
        for a in rows() {
            score += &format!("        let qq{a} = q_s[qr{a} + d];\n");
        }
        for (a, c) in cells() {
            score += &format!("        s{a}_{c} += dot(qq{a}, kk{c});\n");
        }
        score += "    }\n";
    }
    score += "}\n";
    let mask: String = cells()
        .map(|(a, c)| format!("if (k0 + tj + {}u > b.pos0 + r{a}) {{ s{a}_{c} = NEG; }}\n", c * ct))
        .collect();
    // each row's max, then (row_sum) its sum, over the CT threads of the row
    let across = |op: fn(&str, &str) -> String, v: &str| -> String {
        let mut s = String::new();
        if sg {
            let mut d = 1;
            while d < ct {
                for a in rows() {
                    let other = format!("subgroupShuffleXor({v}{a}, {d}u)");
                    s += &format!("{v}{a} = {};\n", op(&format!("{v}{a}"), &other));
                }
                d *= 2;
            }
        } else {
            for a in rows() {
                s += &format!("red_s[r{a} * CT + tj] = {v}{a};\n");
            }
            s += "workgroupBarrier();\n";
            for a in rows() {
                let next = op(&format!("{v}{a}"), &format!("red_s[r{a} * CT + c]"));
                s += &format!("{v}{a} = red_s[r{a} * CT];\nfor (var c = 1u; c < CT; c++) {{ {v}{a} = {next}; }}\n");
            }
        }
        s
    };
    let mut row_max = String::new();
    for a in rows() {
        let m = (0..tn).fold(format!("m{a}"), |acc, c| format!("max({acc}, s{a}_{c})"));
        row_max += &format!("var x{a} = {m};\n");
    }
    row_max += &across(|x, y| format!("max({x}, {y})"), "x");
    let mut softmax = String::new();
    for a in rows() {
        softmax += &format!("let al{a} = exp(m{a} - x{a});\nm{a} = x{a};\n");
        let mut sum = Vec::new();
        for c in 0..tn {
            softmax += &format!("let e{a}_{c} = exp(s{a}_{c} - x{a});\n");
            softmax += &format!("p_s[(tj + {}u) * PS + r{a} / 4u][r{a} % 4u] = e{a}_{c};\n", c * ct);
            sum.push(format!("e{a}_{c}"));
        }
        softmax += &format!("l{a} = l{a} * al{a} + ({});\n", sum.join(" + "));
    }
    softmax += "if (tj == 0u) {\n";
    for a in rows() {
        softmax += &format!("    a_s[r{a} / 4u][r{a} % 4u] = al{a};\n");
    }
    softmax += "}\n";
    let mut pv_scale = String::from("let al = a_s[pr];\n");
    for (i, v) in outs() {
        pv_scale += &format!("o{i}_{v} *= al.{};\n", XYZW[i]);
    }
    // every key of the block, unrolled (BK is small)
    let mut pv = String::new();
    for j in 0..t.bk {
        pv += &format!("{{\n    let pp = p_s[{j}u * PS + pr];\n");
        for v in 0..tv {
            pv += &format!("    let vv{v} = kv_s[{j}u * QS + cv{v}];\n");
        }
        for (i, v) in outs() {
            pv += &format!("    o{i}_{v} += pp.{} * vv{v};\n", XYZW[i]);
        }
        pv += "}\n";
    }
    let mut row_sum = across(|x, y| format!("{x} + {y}"), "l");
    row_sum += "if (tj == 0u) {\n";
    for a in rows() {
        row_sum += &format!("    a_s[r{a} / 4u][r{a} % 4u] = 1.0 / l{a};\n");
        if t.kp > 0 {
            row_sum += &format!("    if (r{a} < b.tn) {{ prefill_stats(b, r{a}, m{a}, l{a}); }}\n");
        }
    }
    row_sum += "}\n";
    let put = if t.kp > 0 { "prefill_part_out" } else { "prefill_out" };
    let mut out = String::from("let inv = a_s[pr];\n");
    for (i, comp) in XYZW.iter().enumerate() {
        out += &format!("if (pr * 4u + {i}u < b.tn) {{\n");
        for v in 0..tv {
            let store = format!("{put}(b, pr * 4u + {i}u, pc + {}u, o{i}_{v} * inv.{comp});", v * cv);
            out += &if (v + 1) * cv > dh4 {
                format!("    if (pc + {}u < DH4) {{ {store} }}\n", v * cv)
            } else {
                format!("    {store}\n")
            };
        }
        out += "}\n";
    }
    let parts = [
        ("init", init),
        ("score_zero", score_zero),
        ("score", score),
        ("mask", mask),
        ("row_max", row_max),
        ("softmax", softmax),
        ("pv_scale", pv_scale),
        ("pv", pv),
        ("row_sum", row_sum),
        ("out", out),
    ];
    fill(src, &parts)
}
