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
/// their own, merged after: attention.rs `parts`). HG: query heads a workgroup (of one kv group,
/// BQ / HG rows each), so that they share each staged key block; a tile of HG > 1 keeps its rows'
/// queries in registers (the split score) and has no Q tile in workgroup memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Tile {
    pub nt: usize,
    pub bq: usize,
    pub bk: usize,
    pub tn: usize,
    pub kp: usize,
    pub hg: usize,
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
            && self.hg > 0
            && self.bq % (4 * self.hg) == 0
    }

    /// Query rows a head: a workgroup's query block.
    pub fn bqh(&self) -> usize {
        self.bq / self.hg
    }

    /// Workgroups for T queries over Hq heads (before key partitions).
    pub fn workgroups(&self, t: usize, hq: usize) -> usize {
        t.div_ceil(self.bqh()) * (hq / self.hg)
    }

    /// Workgroup memory of prefill_attend in bytes: q_s (where HG is 1), kv_s, p_s (padded vec4
    /// rows), a_s, red_s (counted also where the `sg` variant leaves it out).
    pub fn smem(&self, dh: usize) -> usize {
        let qs = dh / 4 + 1;
        let q_rows = if self.hg > 1 { 0 } else { self.bq };
        16 * (q_rows + self.bk) * qs + 16 * self.bk * (self.bq / 4 + 1) + 4 * self.bq + 4 * self.bq * self.ct()
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
        let hg = if self.hg > 1 {
            format!("h{}", self.hg)
        } else {
            String::new()
        };
        format!("dh{dh}_n{nt}q{bq}k{bk}t{tn}{kp}{hg}{}", if sg { "sg" } else { "" })
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
            ("HG", self.hg),
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

/// Lanes a query row's head_dim is split over in the split score (`Split`): a subgroup's CT lanes.
const CD: usize = 8;

/// Whether tile `t` at head_dim `dh` runs the split score on `b` (attention.rs prefers the tiles
/// it serves best there).
pub(super) fn splits(b: &WgpuBackend, t: Tile, dh: usize) -> bool {
    Split::of(t, dh / 4, t.sg(b)).is_some()
}

/// The `sg` variant's score tile with head_dim split over the CT (= CD) lanes of a row group
/// instead of the keys: each thread holds its TM query rows' slices of head_dim (vec4s tj + i CD)
/// in registers for the whole key loop and reads one slice of each key from kv_s, where the
/// keys-across layout reads TM + TN whole rows from workgroup memory a head_dim step: the
/// score's workgroup-memory loads a product go from (TM + TN) / (TM TN) to 1 / TM, and the score
/// phase is bound by those loads (it took twice the P.V phase's time with the same products).
/// The TM x KG partial dots of a group of KG keys are summed over the CD lanes by a
/// reduce-scatter of subgroup shuffles (each level halves what a lane holds), which leaves lane tj
/// NF = 2 of them: indices k = tj NF + s of the (row a, key c) list k = a KG + c. A row's KG / NF
/// lanes then hold its keys.
#[derive(Clone, Copy)]
struct Split {
    tm: usize,
    kg: usize,
    nf: usize,
}

impl Split {
    /// Where tile `t` at head_dim / 4 == `dh4` takes the split score: the `sg` variant, CT == CD
    /// lanes a row group, head_dim a whole number of slices, KG keys a group dividing BK, and at
    /// most 4 scores a lane a block (TM BK / CD): the 64-row 16-key tile (8, with 16 query vec4s
    /// in registers) ran 23% slower split than keys-across on an H100, every other tile faster.
    fn of(t: Tile, dh4: usize, sg: bool) -> Option<Split> {
        let (tm, nf) = (t.tm(), 2);
        if !sg || t.ct() != CD || dh4 % CD != 0 || (CD * nf) % tm != 0 || tm * t.bk > 4 * CD {
            return None;
        }
        let kg = CD * nf / tm;
        (kg >= nf && t.bk % kg == 0 && (kg / nf).is_power_of_two()).then_some(Split { tm, kg, nf })
    }

    /// The score parts (init's rows and query registers, score_zero, score, mask, row_max,
    /// softmax, row_sum's head) for `loop_body`.
    fn parts(self, t: Tile, dh4: usize) -> [String; 7] {
        let Split { tm, kg, nf } = self;
        let (rt, ni, groups) = (t.rt(), dh4 / CD, t.bk / kg);
        // a lane's row (a = tj NF / KG) and its first key in each group (c = tj NF % KG)
        let mut init = format!(
            "let rm = ti + ((tj * {nf}u) / {kg}u) * {rt}u;\nlet cm = (tj * {nf}u) % {kg}u;\nvar mm = NEG;\nvar lm = 0.0;\n"
        );
        // q_s is read here, before the loop's first barrier: the Q tile's staging (and the kernel's
        // prefill_prepare) must be done; a tile without q_s reads its rows' queries itself
        init += "workgroupBarrier();\n";
        for a in 0..tm {
            for i in 0..ni {
                init += &if t.hg > 1 {
                    format!("let q{a}_{i} = row_q(b, ti + {}u, tj + {}u);\n", a * rt, i * CD)
                } else {
                    format!("let q{a}_{i} = q_s[(ti + {}u) * QS + tj + {}u];\n", a * rt, i * CD)
                };
            }
        }
        let cells = || (0..groups).flat_map(move |g| (0..nf).map(move |s| (g, s)));
        let score_zero: String = cells().map(|(g, s)| format!("var s{g}_{s} = 0.0;\n")).collect();
        let mut score = String::new();
        for g in 0..groups {
            score += "{\n";
            for c in 0..kg {
                score += "    {\n";
                for i in 0..ni {
                    score += &format!("        let k{i} = kv_s[{}u * QS + tj + {}u];\n", g * kg + c, i * CD);
                }
                for a in 0..tm {
                    let dots: Vec<String> = (0..ni).map(|i| format!("dot(q{a}_{i}, k{i})")).collect();
                    score += &format!("        x{} = {};\n", a * kg + c, dots.join(" + "));
                }
                score += "    }\n";
            }
            // reduce-scatter: at lane bit m a lane keeps one half of its list (the upper where
            // the bit is set) plus its partner's copy of that half
            let (mut n, mut m) = (tm * kg, CD / 2);
            while n > nf {
                let half = n / 2;
                score += &format!("    let up{m} = (tj & {m}u) != 0u;\n");
                for k in 0..half {
                    let (lo, hi) = (format!("x{k}"), format!("x{}", k + half));
                    score += &format!(
                        "    x{k} = select({lo}, {hi}, up{m}) + subgroupShuffleXor(select({hi}, {lo}, up{m}), {m}u);\n"
                    );
                }
                n = half;
                m /= 2;
            }
            for s in 0..nf {
                score += &format!("    s{g}_{s} = x{s};\n");
            }
            score += "}\n";
        }
        let decl: String = (0..tm * kg).map(|k| format!("var x{k} = 0.0;\n")).collect();
        score = decl + &score;
        let mask: String = cells()
            .map(|(g, s)| {
                format!(
                    "if (k0 + cm + {}u > b.pos0 + rm % BQH) {{ s{g}_{s} = NEG; }}\n",
                    g * kg + s
                )
            })
            .collect();
        // a row's lanes: KG / NF consecutive ones
        let across = |v: &str, op: fn(&str, &str) -> String| -> String {
            let mut s = String::new();
            let mut d = 1;
            while d < kg / nf {
                s += &format!("{v} = {};\n", op(v, &format!("subgroupShuffleXor({v}, {d}u)")));
                d *= 2;
            }
            s
        };
        let mx = cells().fold("mm".to_string(), |acc, (g, s)| format!("max({acc}, s{g}_{s})"));
        let row_max = format!("var xm = {mx};\n") + &across("xm", |x, y| format!("max({x}, {y})"));
        let mut softmax = String::from("let alm = exp(mm - xm);\nmm = xm;\n");
        let mut sum = Vec::new();
        for (g, s) in cells() {
            softmax += &format!("let e{g}_{s} = exp(s{g}_{s} - xm);\n");
            softmax += &format!("p_s[(cm + {}u) * PS + rm / 4u][rm % 4u] = e{g}_{s};\n", g * kg + s);
            sum.push(format!("e{g}_{s}"));
        }
        softmax += &format!("lm = lm * alm + ({});\n", sum.join(" + "));
        softmax += &format!(
            "if (tj % {}u == 0u) {{\n    a_s[rm / 4u][rm % 4u] = alm;\n}}\n",
            kg / nf
        );
        let mut row_sum = across("lm", |x, y| format!("{x} + {y}"));
        row_sum += &format!(
            "if (tj % {}u == 0u) {{\n    a_s[rm / 4u][rm % 4u] = 1.0 / lm;\n",
            kg / nf
        );
        if t.kp > 0 {
            row_sum += "    if (rm % BQH < b.tn) { prefill_stats(row_block(b, rm), rm % BQH, mm, lm); }\n";
        }
        row_sum += "}\n";
        [init, score_zero, score, mask, row_max, softmax, row_sum]
    }
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
    let mut outs_init = String::new();
    for v in 0..tv {
        // a column past the row (head_dim / 4 not a multiple of CV) reads the last one; its
        // result is not stored
        outs_init += &if (v + 1) * cv > dh4 {
            format!("let cv{v} = min(pc + {}u, DH4 - 1u);\n", v * cv)
        } else {
            format!("let cv{v} = pc + {}u;\n", v * cv)
        };
    }
    for (i, v) in outs() {
        outs_init += &format!("var o{i}_{v} = vec4<f32>(0.0);\n");
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
        .map(|(a, c)| {
            format!(
                "if (k0 + tj + {}u > b.pos0 + r{a} % BQH) {{ s{a}_{c} = NEG; }}\n",
                c * ct
            )
        })
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
            row_sum += &format!(
                "    if (r{a} % BQH < b.tn) {{ prefill_stats(row_block(b, r{a}), r{a} % BQH, m{a}, l{a}); }}\n"
            );
        }
    }
    row_sum += "}\n";
    let put = if t.kp > 0 { "prefill_part_out" } else { "prefill_out" };
    let mut out = String::from("let inv = a_s[pr];\n");
    for (i, comp) in XYZW.iter().enumerate() {
        out += &format!("if ((pr * 4u + {i}u) % BQH < b.tn) {{\n");
        out += &format!("    let ob = row_block(b, pr * 4u + {i}u);\n");
        for v in 0..tv {
            let store = format!(
                "{put}(ob, (pr * 4u + {i}u) % BQH, pc + {}u, o{i}_{v} * inv.{comp});",
                v * cv
            );
            out += &if (v + 1) * cv > dh4 {
                format!("    if (pc + {}u < DH4) {{ {store} }}\n", v * cv)
            } else {
                format!("    {store}\n")
            };
        }
        out += "}\n";
    }
    let mut score_parts = [init, score_zero, score, mask, row_max, softmax, row_sum];
    if let Some(sp) = Split::of(t, dh4, sg) {
        score_parts = sp.parts(t, dh4);
    }
    let [init, score_zero, score, mask, row_max, softmax, row_sum] = score_parts;
    // the Q tile in workgroup memory, where the rows' queries are not read into registers whole
    let (q_s, stage_q) = if t.hg > 1 {
        assert!(
            Split::of(t, dh4, sg).is_some(),
            "a tile of HG > 1 needs the split score: {t:?}"
        );
        (String::new(), String::new())
    } else {
        (
            "var<workgroup> q_s: array<vec4<f32>, BQ * QS>;\n".to_string(),
            "for (var e = tid; e < BQ * DH4; e += NT) {\n    q_s[(e / DH4) * QS + e % DH4] = row_q(b, e / DH4, e % DH4);\n}\n"
                .to_string(),
        )
    };
    let parts = [
        ("q_s", q_s),
        ("stage_q", stage_q),
        ("init", init + &outs_init),
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

#[cfg(test)]
mod tests {
    use super::super::attention::{SPLIT_TILES, TILES};
    use super::Split;

    /// The split score takes the tiles attention.rs prefers for it (head_dim 128, subgroups), and
    /// not the 64-row 16-key tile it ran slower on.
    #[test]
    fn split_takes_its_tiles() {
        for t in SPLIT_TILES {
            assert!(Split::of(t, 32, true).is_some(), "{t:?}");
            assert!(Split::of(t, 32, false).is_none(), "{t:?}");
        }
        assert!(Split::of(TILES[0], 32, true).is_none());
    }
}
