//! The cooperative-matrix linear (shaders/linear_coop.wgsl): f32 x split into f16 hi + lo rows,
//! 16-bit W, f32 sums on tensor cores. `plan` (mod.rs) takes `COOP_GEMM` for a large M and
//! `many_rows` under `BatchInvariance::ManyRows`; `linear::sweep` times the candidates and checks
//! them (accuracy, rows independent of M) on a GPU that has the feature, and `tests` compiles
//! every candidate to SPIR-V through naga here.
use crate::backend::wgpu::kernel::{read, read4, write, KernelKey};
use crate::backend::wgpu::shaders::fill;
use crate::backend::wgpu::WgpuBackend;
use crate::dtype::DType;

/// The shape of a coop plan: WN x WM subgroup tiles of TN x TM accumulators each (T x T
/// cooperative matrices: T = 16 where the adapter has f16 16x16x16 products, as NVIDIA's and AMD's
/// do; 8 where it has 8x8x8 ones, as Mesa's lavapipe does), KS K-groups, BK elements of K a step,
/// and KC elements of K a workgroup (0: all of K; else the split-K pass of linear_coop.wgsl, its
/// partials added by linear_splitk.wgsl). A subgroup is `lanes` invocations (32 on NVIDIA; the
/// adapter's one fixed size: 8 on lavapipe). `nbuf` stages of W and x in workgroup memory: 1, or
/// 2 to stage the next step while this one multiplies (one barrier a step instead of two; twice
/// the staging memory). The order of sums is the same either way. `xkd` 0: token t's hi and lo
/// are tile rows 2t and 2t + 1 (separate accumulator rows, added in `finish`); 1: x's hi rows and
/// lo rows are two blocks of the tile rows, both multiplied into one accumulator, so a subgroup
/// holds half the accumulators for its tokens (16-bit W only; another order of sums). `ahead`:
/// the steps a step's loads are issued ahead of its products, 1 or (one stage only) 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Coop {
    pub wn: u32,
    pub tn: u32,
    pub wm: u32,
    pub tm: u32,
    pub ks: u32,
    pub bk: u32,
    pub kc: u32,
    pub t: u32,
    pub lanes: u32,
    pub nbuf: u32,
    pub xkd: u32,
    pub ahead: u32,
}

impl Coop {
    pub const fn new(wn: u32, tn: u32, wm: u32, tm: u32, ks: u32, bk: u32) -> Self {
        Coop {
            wn,
            tn,
            wm,
            tm,
            ks,
            bk,
            kc: 0,
            t: 16,
            lanes: 32,
            nbuf: 1,
            xkd: 0,
            ahead: 1,
        }
    }
    /// The shape with two stages of W and x (`nbuf`): sweep candidates only, until a GPU sweep
    /// says whether a plan should take one.
    #[cfg(test)]
    pub const fn double(self) -> Self {
        Coop { nbuf: 2, ..self }
    }
    /// The shape on an adapter's T x T matrices and subgroups of `lanes` (the tables are written
    /// for 16 and 32).
    pub const fn on(self, t: u32, lanes: u32) -> Self {
        Coop { t, lanes, ..self }
    }
    /// The shape with K split across workgroups in runs of `kc`.
    pub const fn split(self, kc: u32) -> Self {
        Coop { kc, ..self }
    }
    /// Workgroups a row tile takes along K (1 unsplit): ceil(K / KC).
    pub fn splits(&self, k: usize) -> usize {
        if self.kc == 0 {
            1
        } else {
            k.div_ceil(self.kc as usize).max(1)
        }
    }
    /// tile columns a workgroup: its weight rows (outputs) for a 16-bit W; a quantized W's rows
    /// take two each (hi, lo: coop_quant.rs)
    pub fn bn(&self) -> u32 {
        self.wn * self.tn * self.t
    }
    /// The shape whose loads run two steps ahead of the products (`ahead` 2; one stage only): a
    /// second set of load registers, so a step's global loads have two steps' products to arrive.
    pub const fn two_ahead(self) -> Self {
        Coop { ahead: 2, ..self }
    }
    /// The shape with x's hi and lo rows in two blocks of the tile rows, both multiplied into one
    /// accumulator (`xkd` 1; 16-bit W only): TM tiles of T tokens a subgroup.
    pub const fn hi_lo_blocks(self) -> Self {
        Coop { xkd: 1, ..self }
    }
    /// tokens (x rows) a workgroup: two tile rows each (hi, lo)
    pub const fn tok(&self) -> u32 {
        self.wm * self.tm * self.t / (2 - self.xkd)
    }
    pub fn nsg(&self) -> u32 {
        self.wn * self.wm * self.ks
    }
    /// workgroup memory: the f16 W and x of a step (rows BK + 8 apart) in each of `nbuf` stages,
    /// a T x T f32 scratch a subgroup
    pub fn shared_bytes(&self) -> u32 {
        self.nbuf * (self.bn() + 2 * self.tok()) * (self.bk + 8) * 2 + self.nsg() * self.t * self.t * 4
    }
    pub fn variant(&self) -> String {
        let split = if self.kc > 0 {
            format!("_kc{}", self.kc)
        } else {
            String::new()
        };
        let (n, m) = (format!("{}x{}", self.wn, self.tn), format!("{}x{}", self.wm, self.tm));
        let t = if (self.t, self.lanes) == (16, 32) {
            String::new()
        } else {
            format!("_t{}l{}", self.t, self.lanes)
        };
        let db = if self.nbuf == 2 { "_db" } else { "" };
        let kd = if self.xkd == 1 { "_kd" } else { "" };
        let ah = if self.ahead == 2 { "_a2" } else { "" };
        format!("coop_n{n}_m{m}_ks{}_bk{}{split}{db}{kd}{ah}{t}", self.ks, self.bk)
    }
    /// The shape is well formed (the kernel's own constraints, whatever the adapter).
    pub fn valid(&self) -> bool {
        matches!(self.t, 8 | 16)
            && self.bn() * self.tok() * self.ks > 0
            && self.bk % self.t == 0
            && (self.bk / self.t) % self.ks == 0
            && self.tm * self.tn <= 8
            && self.nsg() * self.lanes <= 1024
            && self.kc % self.bk == 0
            && matches!(self.nbuf, 1 | 2)
            && self.xkd <= 1
            && (self.ahead == 1 || self.ahead == 2 && self.nbuf == 1)
    }
}

/// Whether the adapter can run `c`: cooperative matrices of c's size (f16 T x T x T products with
/// f32 sums, and subgroups of one size, asked for at open), workgroup memory and invocations.
pub(super) fn fits(b: &WgpuBackend, c: Coop) -> bool {
    b.caps.cooperative_matrix
        && (b.caps.coop_tile, b.caps.subgroup_min) == (c.t, c.lanes)
        && c.valid()
        && c.shared_bytes() <= b.caps.max_workgroup_storage
        && c.nsg() * c.lanes <= b.caps.max_invocations
}

/// From this many weight rows (a vocabulary-sized N: the LM head) the many-rows family leaves K
/// unsplit: such a matrix gives workgroups enough without the split.
pub(super) const VOCAB_N: usize = 65536;

/// K a workgroup in the many-rows family below `VOCAB_N` (`Coop::kc`). On an H200 at 64 rows the
/// 128 x 64 tile split this way ran each per-layer shape of Qwen3-0.6B in 0.3-0.45x the time of
/// the earlier family (four K-groups in a workgroup of 8 or 16 tokens), before the second pass.
pub(super) const MANY_ROWS_KC: u32 = 256;

/// The many-rows family (`BatchInvariance::ManyRows`, the serving engine of many sequences). A
/// row's order of sums depends on K, KC and KS alone, so a weight matrix must see one (KC, KS) at
/// every M: KS is 1 throughout and KC depends on N only (K split across workgroups in runs of
/// `MANY_ROWS_KC` below `VOCAB_N`, so that a few rows still fill the GPU while each weight tile
/// is read once for up to 64 rows; unsplit from it). `many_rows` picks the tile by M.
pub(super) const MANY_ROWS: [Coop; 4] = [
    Coop::new(2, 2, 1, 2, 1, 64).split(MANY_ROWS_KC), // below 32 rows
    Coop::new(4, 2, 2, 4, 1, 64).split(MANY_ROWS_KC), // from 32 rows
    Coop::new(2, 2, 1, 2, 1, 64),                     // N >= VOCAB_N, below 32 rows
    Coop::new(4, 2, 2, 4, 1, 64),                     // N >= VOCAB_N, from 32 rows
];

/// The many-rows shape for `m` x rows against `n` weight rows.
pub(super) fn many_rows(m: usize, n: usize) -> Coop {
    MANY_ROWS[usize::from(m >= 32) + if n >= VOCAB_N { 2 } else { 0 }]
}

/// Whether every shape of the many-rows family runs on `b` (all or none: a family that changed
/// kernels with M would change a row's bits with the batch).
pub(super) fn many_rows_fit(b: &WgpuBackend) -> bool {
    MANY_ROWS.iter().all(|&c| fits(b, on(b, c)))
}

/// `c` on `b`'s matrices and subgroups.
pub(super) fn on(b: &WgpuBackend, c: Coop) -> Coop {
    c.on(b.caps.coop_tile, b.caps.subgroup_min)
}

/// Whether the 16-byte loaders apply: x rows start on 4 f32, W rows on 8 halves.
pub(super) fn aligned(k: usize, x_off: usize, w_off: usize) -> bool {
    k % 8 == 0 && x_off % 4 == 0 && w_off % 8 == 0
}

/// The kernel key and constants of `c` for W of dtype `wd` (x and y f32), with the swiglu epilogue
/// or not. A quantized W (no swiglu) is bound as words; `aligned` is then about x alone.
pub(super) fn spec(c: Coop, wd: DType, aligned: bool, swiglu: bool) -> (KernelKey, Vec<(&'static str, String)>) {
    let quant = wd.is_quant();
    assert!(
        c.valid() && (matches!(wd, DType::F16 | DType::BF16) || quant && !swiglu && c.xkd == 0),
        "linear coop: {c:?} {wd}"
    );
    let x = if aligned {
        read4("x", DType::F32)
    } else {
        read("x", DType::F32)
    };
    let w = if aligned || quant {
        read4("w", wd)
    } else {
        read("w", wd)
    };
    let bindings = vec![x, w, write("y", DType::F32)];
    let wk = match wd {
        DType::F16 => 1,
        DType::BF16 => 2,
        _ => 0,
    };
    let consts = [
        ("W_KIND", wk),
        ("WN", c.wn),
        ("TN", c.tn),
        ("WM", c.wm),
        ("TM", c.tm),
        ("KS", c.ks),
        ("BK", c.bk),
        ("KC", c.kc),
        ("NSG", c.nsg()),
        ("T", c.t),
        ("SUBW", c.lanes),
        ("W_SPLIT", if quant { 2 } else { 1 }),
        ("NBUF", c.nbuf),
        ("XKD", c.xkd),
    ]
    .map(|(n, v)| (n, format!("{v}u")))
    .to_vec();
    let key = KernelKey {
        entry: "linear_coop",
        bindings,
        variant: format!(
            "{}{}{}",
            c.variant(),
            if aligned { "a" } else { "" },
            if swiglu { "_swiglu" } else { "" }
        ),
    };
    (key, consts)
}

/// Where W comes from: 16-bit rows (Params and loaders here), or a quantized matrix (`prefix`:
/// qcommon.wgsl with its Params, the type's constants and its type file, whose `wq4` dequantizes).
pub(super) enum WSrc<'a> {
    Half,
    Quant { prefix: &'a str },
}

/// Params of the 16-bit path (linear/mod.rs `Params`).
const PARAMS: &str = "struct Params {
    offs: array<vec4<u32>, 2>,
    m: u32,
    n: u32,
    k: u32,
    _pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
";

/// The x loader of the aligned (16-byte) or scalar path: ld_x4(m, k), raw bits, zeros past M and
/// K (k a multiple of 4; in the scalar path each element is checked).
fn x_loader(aligned: bool) -> &'static str {
    if aligned {
        "fn ld_x4(m: u32, k: u32) -> vec4<u32> {
    if (m >= p.m || k >= p.k) { return vec4<u32>(); }
    return x_v4[(p.offs[0].x + m * p.k + k) >> 2u];
}
"
    } else {
        "fn x_bits(m: u32, k: u32) -> u32 {
    if (m >= p.m || k >= p.k) { return 0u; }
    return ldbits_x(m * p.k + k);
}
fn ld_x4(m: u32, k: u32) -> vec4<u32> {
    return vec4<u32>(x_bits(m, k), x_bits(m, k + 1u), x_bits(m, k + 2u), x_bits(m, k + 3u));
}
"
    }
}

/// The W loader: ld_w8(n, k), 8 weights of row n from k (a multiple of 8), zeros past N and K. A
/// 16-bit W as raw pairs (16 bytes where aligned, else each element checked), a quantized one
/// dequantized by the type file's `wq4` (K is whole blocks, so 8 weights never straddle its end).
fn w_loader(w: &WSrc, aligned: bool) -> &'static str {
    match (w, aligned) {
        (WSrc::Quant { .. }, _) => {
            "alias WREG = mat2x4<f32>;
fn ld_w8(n: u32, k: u32) -> mat2x4<f32> {
    if (n >= p.n || k >= p.k) { return mat2x4<f32>(); }
    let rb = p.wbase + n * p.rowb;
    return mat2x4<f32>(wq4(rb, k), wq4(rb, k + 4u));
}
"
        }
        (WSrc::Half, true) => {
            "alias WREG = vec4<u32>;
fn ld_w8(n: u32, k: u32) -> vec4<u32> {
    if (n >= p.n || k >= p.k) { return vec4<u32>(); }
    return w_v4[(p.offs[0].y + n * p.k + k) >> 3u];
}
"
        }
        (WSrc::Half, false) => {
            "alias WREG = vec4<u32>;
fn w_bits(n: u32, k: u32) -> u32 {
    if (n >= p.n || k >= p.k) { return 0u; }
    return ldbits_w(n * p.k + k);
}
fn ld_w8(n: u32, k: u32) -> vec4<u32> {
    var v = vec4<u32>();
    for (var j = 0u; j < 4u; j++) {
        v[j] = w_bits(n, k + 2u * j) | (w_bits(n, k + 2u * j + 1u) << 16u);
    }
    return v;
}
"
        }
    }
}

/// The WGSL body of `c` from `src` (the text of shaders/linear_coop.wgsl): its `enable` lines,
/// then Params and the loaders, then the rest with the `//@` lines unrolled.
pub(super) fn coop_body(src: &str, c: Coop, aligned: bool, swiglu: bool) -> String {
    coop_body_of(src, c, aligned, swiglu, WSrc::Half)
}

/// `coop_body` for W from `w`.
pub(super) fn coop_body_of(src: &str, c: Coop, aligned: bool, swiglu: bool, w: WSrc) -> String {
    let quant = matches!(w, WSrc::Quant { .. });
    let Coop { tn, tm, ks, bk, t, .. } = c;
    let nt = c.nsg() * c.lanes;
    let w_split = if quant { 2 } else { 1 };
    let (wv, xv) = (c.bn() / w_split * bk / 8, c.tok() * bk / 4);
    let (lw, lx) = (wv.div_ceil(nt), xv.div_ceil(nt));
    let tiles = || (0..tm).flat_map(move |i| (0..tn).map(move |j| (i, j)));
    let mut decl = String::new();
    for (i, j) in tiles() {
        decl += &format!("var c{i}_{j} = coop_mat{t}x{t}<f32, C>();\n");
    }
    // a step's loads into the register set `r` (wr{j}, xr{j}), its staging from them, and zeros
    // into them
    let regs = |r: &str| {
        let (mut load, mut stage, mut zero) = (String::new(), String::new(), String::new());
        let st = if quant { "stage_wq" } else { "stage_w" };
        for j in 0..lw {
            load += &format!("w{r}{j} = load_w(lid + {j}u * NT, n0, k0);\n");
            stage += &format!("{st}(lid + {j}u * NT, w{r}{j}, sw);\n");
            zero += &format!("w{r}{j} = WREG();\n");
        }
        for j in 0..lx {
            load += &format!("x{r}{j} = load_x(lid + {j}u * NT, m0, k0);\n");
            stage += &format!("stage_x(lid + {j}u * NT, x{r}{j}, sx);\n");
            zero += &format!("x{r}{j} = vec4<u32>();\n");
        }
        [load, stage, zero]
    };
    let sets: &[&str] = if c.ahead == 2 { &["v", "u"] } else { &["v"] };
    for r in sets {
        decl += &(0..lw).map(|j| format!("var w{r}{j} = WREG();\n")).collect::<String>();
        decl += &(0..lx)
            .map(|j| format!("var x{r}{j} = vec4<u32>();\n"))
            .collect::<String>();
    }
    let mut mma = String::new();
    for jj in 0..bk / t / ks {
        mma += &format!("{{\nlet kk = ({jj}u * KS + ks) * T;\n");
        for i in 0..tm {
            mma += &format!(
                "let a{i} = coopLoadT<coop_mat{t}x{t}<f16, A>>(&xs[(mx + ((wm * TM + {i}u) * T) * XS + kk) / 4u], XS / 4u);\n"
            );
            if c.xkd == 1 {
                mma += &format!(
                    "let l{i} = coopLoadT<coop_mat{t}x{t}<f16, A>>(&xs[(mx + (TOK + (wm * TM + {i}u) * T) * XS + kk) / 4u], XS / 4u);\n"
                );
            }
        }
        for j in 0..tn {
            mma += &format!(
                "let b{j} = coopLoad<coop_mat{t}x{t}<f16, B>>(&ws[(mw + ((wn * TN + {j}u) * T) * XS + kk) / 4u], XS / 4u);\n"
            );
        }
        for (i, j) in tiles() {
            mma += &format!("c{i}_{j} = coopMultiplyAdd(a{i}, b{j}, c{i}_{j});\n");
            if c.xkd == 1 {
                mma += &format!("c{i}_{j} = coopMultiplyAdd(l{i}, b{j}, c{i}_{j});\n");
            }
        }
        mma += "}\n";
    }
    let main = match c.ahead {
        2 => two_ahead_loop([regs("v"), regs("u")], &mma),
        _ => {
            let [load, stage, _] = regs("v");
            main_loop(c.nbuf, &load, &stage, &mma)
        }
    };
    // split K: the raw sums go to the partials (linear_splitk.wgsl takes the swiglu)
    let finish = if quant {
        "finish_q"
    } else if swiglu && c.kc == 0 {
        "finish_swiglu"
    } else {
        "finish"
    };
    let mut store = String::new();
    for (i, j) in tiles() {
        store += &format!(
            "coopStoreT(c{i}_{j}, &red[sg * TT], T);\nworkgroupBarrier();\n\
             {finish}(ks * SUBW + lane, sg - ks, (wm * TM + {i}u) * T, (wn * TN + {j}u) * T, m0, n0, part);\n\
             workgroupBarrier();\n"
        );
    }
    let (mut enables, mut rest) = (String::new(), String::new());
    for line in src.lines() {
        if line.starts_with("enable ") {
            enables += line;
            enables.push('\n');
        } else {
            rest += line;
            rest.push('\n');
        }
    }
    let filled = fill(&rest, &[("decl", decl), ("loop", main), ("store", store)]);
    let put_y = if c.kc == 0 {
        "fn put_y(part: u32, m: u32, n: u32, v: f32) { st_y(m * p.n + n, v); }\n"
    } else {
        "fn put_y(part: u32, m: u32, n: u32, v: f32) { st_y((part * p.m + m) * p.n + n, v); }\n"
    };
    let params = match w {
        WSrc::Half => PARAMS,
        WSrc::Quant { prefix } => prefix,
    };
    format!(
        "{enables}{params}\n{}{}{put_y}{filled}",
        x_loader(aligned),
        w_loader(&w, aligned)
    )
}

/// linear_coop.wgsl's walk over K (`//@loop`) from a step's loads, staging (into the stage at W
/// offset `sw`, x offset `sx`) and products (from the stage at `mw`, `mx`). One stage: staged and
/// multiplied between two barriers, the next step's loads in flight meanwhile. Two: step s
/// multiplies stage s % 2 while the next step is staged into the other, one barrier a step; the
/// barrier ending step s - 1 is what frees the stage step s writes.
fn main_loop(nbuf: u32, load: &str, stage: &str, mma: &str) -> String {
    if nbuf == 1 {
        return format!(
            "let sw = 0u;\nlet sx = 0u;\nlet mw = 0u;\nlet mx = 0u;\n{load}\
             for (var s = 0u; s < steps; s++) {{\nworkgroupBarrier();\n{stage}workgroupBarrier();\n\
             k0 += BK;\nif (k0 < ke) {{\n{load}}}\n{mma}}}\n"
        );
    }
    format!(
        "{load}{{\nlet sw = 0u;\nlet sx = 0u;\n{stage}}}\nworkgroupBarrier();\n\
         for (var s = 0u; s < steps; s++) {{\nlet cur = s % 2u;\nlet mw = cur * BN * XS;\n\
         let mx = cur * BMT * XS;\nk0 += BK;\nlet more = k0 < ke;\nif (more) {{\n{load}}}\n{mma}\
         if (more) {{\nlet sw = (1u - cur) * BN * XS;\nlet sx = (1u - cur) * BMT * XS;\n{stage}}}\n\
         workgroupBarrier();\n}}\n"
    )
}

/// `main_loop` for one stage with the loads two steps ahead (`Coop::ahead` 2): register sets v and
/// u take turns, the loop two steps a trip. Its second step runs whatever the step count (the
/// cooperative ops want uniform control flow): past K it stages zeros, whose products add +0 to
/// accumulators that start at +0 and so never hold -0, which leaves every sum's bits as they were.
/// `sets`: each register set's [load, stage, zero] (`coop_body_of`'s `regs`).
fn two_ahead_loop(sets: [[String; 3]; 2], mma: &str) -> String {
    let next = |[load, _, zero]: &[String; 3]| format!("k0 += BK;\nif (k0 < ke) {{\n{load}}} else {{\n{zero}}}\n");
    let step = |set: &[String; 3]| format!("workgroupBarrier();\n{}workgroupBarrier();\n{}{mma}", set[1], next(set));
    format!(
        "let sw = 0u;\nlet sx = 0u;\nlet mw = 0u;\nlet mx = 0u;\n{}{}for (var s = 0u; s < steps; s += 2u) {{\n{}{}}}\n",
        sets[0][0],
        next(&sets[1]),
        step(&sets[0]),
        step(&sets[1])
    )
}

/// Every coop shape the sweep times and the tests compile. Small-M shapes (8 tokens a
/// workgroup) split K over KS subgroups to keep many bytes in flight; large-M shapes hold
/// 2x2..4x2 accumulators a subgroup.
#[cfg(test)]
pub(crate) const CANDIDATES: [Coop; 40] = [
    // 8 tokens (16 tile rows) a workgroup
    Coop::new(1, 1, 1, 1, 4, 128), // BN 16, 4 subgroups, K over 4
    Coop::new(2, 1, 1, 1, 4, 128), // BN 32, 8 subgroups
    Coop::new(4, 1, 1, 1, 2, 128), // BN 64, 8 subgroups, K over 2
    Coop::new(2, 2, 1, 1, 2, 128), // BN 64, 4 subgroups
    Coop::new(4, 2, 1, 1, 1, 64),  // BN 128, 4 subgroups, no K split
    Coop::new(2, 1, 1, 1, 1, 256), // BN 32, 2 subgroups, long steps
    // 16 .. 64 tokens
    Coop::new(2, 2, 1, 2, 1, 64), // BN 64, 16 tokens, 2 subgroups of 2x2
    Coop::new(2, 2, 2, 2, 1, 32), // BN 64, 32 tokens, 4 subgroups of 2x2
    Coop::new(2, 4, 2, 2, 1, 32), // BN 128, 32 tokens, 4 subgroups of 2x4
    Coop::new(2, 2, 4, 2, 1, 32), // BN 64, 64 tokens, 8 subgroups of 2x2
    Coop::new(4, 2, 2, 4, 1, 32), // BN 128, 64 tokens, 8 subgroups of 4x2
    Coop::new(2, 4, 2, 2, 2, 32), // BN 128, 32 tokens, 8 subgroups of 2x4, K over 2
    // the many-rows family's K split (4) with more tokens a workgroup
    Coop::new(1, 2, 1, 1, 4, 128), // BN 32, 8 tokens, 4 subgroups of 1x2
    Coop::new(1, 1, 1, 2, 4, 64),  // BN 16, 16 tokens, 4 subgroups of 2x1
    Coop::new(1, 2, 1, 2, 4, 64),  // BN 32, 16 tokens, 4 subgroups of 2x2
    Coop::new(2, 2, 1, 2, 4, 64),  // BN 64, 16 tokens, 8 subgroups of 2x2
    Coop::new(1, 2, 2, 2, 4, 64),  // BN 32, 32 tokens, 8 subgroups of 2x2
    Coop::new(2, 2, 2, 2, 4, 64),  // BN 64, 32 tokens, 16 subgroups of 2x2
    // longer K steps: more bytes a round trip, fewer barriers
    Coop::new(1, 1, 1, 1, 4, 256),
    Coop::new(1, 2, 1, 1, 4, 256),
    Coop::new(1, 1, 1, 2, 4, 256),
    Coop::new(1, 2, 1, 2, 4, 256),
    Coop::new(1, 2, 1, 2, 4, 128),
    Coop::new(1, 2, 2, 2, 4, 128),
    Coop::new(2, 2, 1, 2, 4, 128),
    Coop::new(2, 2, 4, 2, 1, 64),
    Coop::new(2, 4, 2, 2, 1, 64),
    Coop::new(4, 2, 2, 4, 1, 64),
    // larger GEMM tiles than COOP_GEMM's (the largest was the fastest at M = 2048): twice the
    // weight rows or twice the tokens a workgroup, 16 subgroups
    Coop::new(8, 2, 2, 4, 1, 32), // BN 256, 64 tokens
    Coop::new(4, 2, 4, 4, 1, 32), // BN 128, 128 tokens
    // x's hi and lo rows into one accumulator: 128 tokens on 2x2 accumulators a subgroup
    Coop::new(4, 2, 4, 2, 1, 32).hi_lo_blocks(),
    // ... with its loads two steps ahead
    Coop::new(4, 2, 4, 2, 1, 32).hi_lo_blocks().two_ahead(),
    // two stages of W and x (the next step staged while this one multiplies), in 48 KiB
    Coop::new(4, 2, 2, 4, 1, 32).double(), // BN 128, 64 tokens (COOP_GEMM's tile), 48 KiB
    Coop::new(2, 2, 4, 2, 1, 32).double(), // BN 64, 64 tokens
    Coop::new(2, 4, 2, 2, 1, 32).double(), // BN 128, 32 tokens
    Coop::new(2, 2, 2, 2, 1, 64).double(), // BN 64, 32 tokens, K steps of 64
    // K split across workgroups (the many-rows family)
    Coop::new(2, 2, 1, 2, 1, 64).split(MANY_ROWS_KC),
    Coop::new(4, 2, 2, 4, 1, 64).split(MANY_ROWS_KC),
    Coop::new(4, 2, 2, 4, 1, 64).split(128),
    Coop::new(4, 2, 2, 4, 1, 64).split(512),
];

/// `Plan::Coop` of every candidate on T x T matrices in subgroups of `lanes` (`Coop::on`).
#[cfg(test)]
pub(crate) fn plans(t: u32, lanes: u32) -> Vec<super::Plan> {
    CANDIDATES.iter().map(|&c| super::Plan::Coop(c.on(t, lanes))).collect()
}
