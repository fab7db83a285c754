//! The one tuning surface of the wgpu backend: how it builds and records kernels on one adapter.
//!
//! `Tuning::for_adapter` fills it once, when the adapter opens: the defaults for that adapter,
//! then the three documented environment variables below. Nothing on the dispatch path reads the
//! environment; kernel plans read these fields.
//!
//! | variable              | field          | what for                                                   |
//! |-----------------------|----------------|------------------------------------------------------------|
//! | `WGLLM_SHADER_CHECKS` | `checks`       | `1` every kernel with wgpu's runtime checks, `0` none      |
//! | `WGLLM_SYNC`          | `sync`         | `all` or `entry,entry`: submit after those dispatches      |
//! | `WGLLM_SHADER_DIR`    | `shader_dir`   | compile the WGSL read from this directory (shaders.rs)     |
use std::path::PathBuf;

/// Whether kernels are built with wgpu's runtime checks (naga's index clamps where the driver
/// has no robust buffer access, a counter in every loop, guarded integer division).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// With checks, except the entries in `UNCHECKED`.
    Default,
    /// Every kernel with checks (`WGLLM_SHADER_CHECKS=1`: to rule them out when a kernel misbehaves).
    All,
    /// No kernel with checks (`WGLLM_SHADER_CHECKS=0`: A/B timing).
    None,
}

/// The entries built without runtime checks by default: the float and quantized linears' matvecs
/// and the quantized embedding (linear/, quant/), the cooperative-matrix linear, the prefill
/// attention tiles, paged attention (plain and gated) and the gated delta rule's kernels. Their
/// loops are bounded, every global read and write is guarded against Params' sizes (and block
/// tables against the pool) in the kernel, and every workgroup-memory and private-array index is
/// in range by construction (the loop bounds that make it are constants, or the subgroup count,
/// which the matvec's STRIDE bounds), so the checks add nothing there but time: naga's index clamps
/// keep a private array indexed in a loop out of registers, and in a decode step's short kernels
/// their extra instructions are time on the critical path (BENCHMARKS.md, r27 and r39, has what
/// each entry gained). The other kernels keep them.
pub const UNCHECKED: [&str; 16] = [
    "matvec",
    "qmatvec",
    "qmatvec_xs",
    "xlimbs",
    "qembedding",
    "linear_coop",
    "attention_prefill",
    "gated_attention_prefill",
    "paged_attention",
    "paged_attention_lone",
    "paged_gated_attention",
    "gdn_batch",
    "gdn_conv_norm",
    "gdn_recurrent",
    "gdn_chunk_prep",
    "gdn_chunk_scan",
];

/// Which dispatches are followed at once by a submit (to find the kernel behind a device loss or
/// a hang: the error then surfaces at that kernel's submit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncAfter {
    /// Dispatches are submitted together (a forward step is one submit).
    Batched,
    /// After every dispatch (`WGLLM_SYNC=all`).
    All,
    /// After the dispatches of these entry points (`WGLLM_SYNC=rms_norm,qmatvec`).
    Entries(Vec<String>),
}

/// The float matvec's workgroup: WG threads, R weight rows, U steps a trip (linear/); from
/// `wide_from` x rows on, `wide_r` weight rows and up to `wide_mr` x rows a workgroup. WG and U
/// fix a row's order of sums, so they are the same for every M (batch invariance); R and MR are
/// free per M.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatvecShape {
    pub wg: u32,
    pub r: u32,
    pub u: u32,
    pub wide_from: usize,
    pub wide_r: u32,
    pub wide_mr: u32,
    /// From this K on, `long_wg` threads a workgroup at every M, and `long_r` weight rows below
    /// `wide_from` x rows: a long row gives each thread more steps, which a wider workgroup shares
    /// out.
    pub long_k: usize,
    pub long_wg: u32,
    pub long_r: u32,
    /// From this N on (an LM head over a vocabulary), `vocab_wg` threads a workgroup at every M.
    pub vocab_n: usize,
    pub vocab_wg: u32,
    /// A residual add + norm read inside the gate/up projection with the swiglu in its epilogue
    /// (add_rms_norm_linear_swiglu, a one-token decode step below `long_k`): `swiglu_norm_wg` threads
    /// and `swiglu_norm_r` weight rows (whole (gate, up) pairs). Every workgroup loads and squares
    /// its x row (a, b and the norm weight) itself, so more rows a workgroup share that work.
    pub swiglu_norm_wg: u32,
    pub swiglu_norm_r: u32,
}

impl MatvecShape {
    /// (WG, R) of a matvec over a weight matrix of N rows of K elements, for M below `wide_from`.
    /// WG depends on the matrix only, never on M, so every M gives a row the same bits.
    pub fn workgroup(&self, k: usize, n: usize) -> (u32, u32) {
        if n >= self.vocab_n {
            (self.vocab_wg, self.r)
        } else if k >= self.long_k {
            (self.long_wg, self.long_r)
        } else {
            (self.wg, self.r)
        }
    }

    /// (WG, R) of add_rms_norm_linear_swiglu's matvec over N rows of K elements at M = 1: its
    /// own shape for rows shorter than `long_k`; None (the plain linear's shape) past them.
    pub fn swiglu_norm(&self, k: usize, n: usize) -> Option<(u32, u32)> {
        (k < self.long_k && n < self.vocab_n).then_some((self.swiglu_norm_wg, self.swiglu_norm_r))
    }
}

#[derive(Clone, Debug)]
pub struct Tuning {
    pub checks: Checks,
    pub sync: SyncAfter,
    /// Where the kernels' WGSL comes from: None the copies built in, else every shaders/ file read
    /// from this directory when the adapter opens.
    pub shader_dir: Option<PathBuf>,
    /// The float matvec's workgroup (every M). 64 threads, 2 weight rows (times up to 4 x rows) and
    /// 4 steps a trip: at or within ~10% of the best shape of a sweep (linear/sweep.rs) for M = 1.
    /// From 8 x rows on (a batched decode step, a prefill), 2 weight rows times up to 8 x rows:
    /// the best or within 25% of it at every shape of an H200 sweep at M = 8..512 (4 x 16 was
    /// 1.6x slower at M = 64). Rows of 2048 elements and more take 128 threads and 1 row (a
    /// dependent chain of them 1-1.6 us a dispatch faster on the H200 at Qwen3-0.6B's o and down
    /// projections), an LM head 32 threads (12 us faster); every M of such a matrix alike. The
    /// gate/up projection with the add + norm before it and the swiglu after it inside (a
    /// one-token decode step, rows below 2048 elements): 32 threads and 4 rows (Qwen3-0.6B bf16 decode
    /// 1.6% faster than 64 x 2 on an H100; 64 x 4 and 128 x 2 were slower).
    pub float_matvec: MatvecShape,
    /// Weight elements from which q4_k's matvec (f32 x, K >= 2048) takes the integer-dot lanes
    /// with x limbs made by each workgroup: below it the matrix is too small for the limb
    /// conversion to pay for itself against the vec4 lanes.
    pub limbs_wg_min: usize,
    /// Weight elements from which those lanes take x limbs from a pre-pass instead: one extra
    /// dispatch, worth it once every one of the many workgroups would otherwise convert x itself.
    pub limbs_pre_min: usize,
    /// Bytes of paged_attention's partition scratch at most (capped by the device's largest
    /// binding): the rows of a call whose records need more go in several dispatch pairs, each a
    /// run of rows (a row's bits do not change: each is computed from itself alone). 128 MiB
    /// holds a 64-sequence decode step with 32 query heads of head_dim 128 and up to 7,936 keys
    /// a table row in one pair.
    pub paged_scratch: u64,
    /// Sequences of a decode batch up to which gdn_conv_norm convolves q/k/v inside its tiles;
    /// past them the conv runs as its own dispatch before the fused kernel. Inside, every tile of
    /// a value head recomputes its key head's q/k conv: at one sequence that costs less than a
    /// dispatch of its own (Qwen3.5-0.8B decode 1.03x on an H200); from 8 to 64 sequences the two
    /// forms are within 1% of each other, so 8 keeps the inside form where a step is mostly
    /// dispatch latency and the plain kernel's fewer loads a tile everywhere else.
    pub gdn_conv_inside_max: usize,
}

impl Tuning {
    /// The defaults (the same on every adapter today; the place to specialize one), then the
    /// environment, read here and only here.
    pub fn for_adapter(_info: &wgpu::AdapterInfo) -> Tuning {
        let mut t = Tuning::defaults();
        t.checks = match std::env::var("WGLLM_SHADER_CHECKS").ok().as_deref() {
            Some("1") => Checks::All,
            Some("0") => Checks::None,
            _ => Checks::Default,
        };
        t.sync = match std::env::var("WGLLM_SYNC").ok().as_deref() {
            None | Some("") => SyncAfter::Batched,
            Some("all") => SyncAfter::All,
            Some(list) => SyncAfter::Entries(list.split(',').map(|e| e.trim().to_string()).collect()),
        };
        t.shader_dir = std::env::var_os("WGLLM_SHADER_DIR").map(PathBuf::from);
        t
    }

    /// Every knob at its default, the environment not consulted.
    pub fn defaults() -> Tuning {
        Tuning {
            checks: Checks::Default,
            sync: SyncAfter::Batched,
            shader_dir: None,
            float_matvec: MatvecShape {
                wg: 64,
                r: 2,
                u: 4,
                wide_from: 8,
                wide_r: 2,
                wide_mr: 8,
                long_k: 2048,
                long_wg: 128,
                long_r: 1,
                vocab_n: 65536,
                vocab_wg: 32,
                swiglu_norm_wg: 32,
                swiglu_norm_r: 4,
            },
            limbs_wg_min: 1 << 22,
            limbs_pre_min: 1 << 27,
            paged_scratch: 128 << 20,
            gdn_conv_inside_max: 8,
        }
    }

    /// Whether the kernel `entry` is built with wgpu's runtime checks.
    pub fn checked(&self, entry: &str) -> bool {
        match self.checks {
            Checks::All => true,
            Checks::None => false,
            Checks::Default => !UNCHECKED.contains(&entry),
        }
    }

    /// Whether a dispatch of `entry` is submitted at once.
    pub fn sync_after(&self, entry: &str) -> bool {
        match &self.sync {
            SyncAfter::Batched => false,
            SyncAfter::All => true,
            SyncAfter::Entries(e) => e.iter().any(|x| x == entry),
        }
    }
}
