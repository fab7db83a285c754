//! The one `Op` enum. Every match on it is exhaustive: a new op does not compile until every
//! backend (and the harness) says something about it.
//!
//! Shapes are row-major and contiguous. `OpDesc::check` is the single statement of each op's
//! contract (input/output count, dtypes, shapes; desc.rs); backends call it before anything else.
//! RoPE's frequency tables, which the models upload and the rope ops read, are in rope.rs.
mod desc;
mod fused;
mod hybrid;
mod paged;
mod rope;
mod sample;
mod traffic;

pub use desc::{gdn_dims, OpDesc, TensorDesc};
pub use hybrid::{check_state_batch, gdn_conv_norm_wiring, state_seq_words, StateSeq, STATE_SEQ_FIELDS};
pub use paged::{check_paged_batch, check_slots, paged_slot, PagedSeq, SEQ_FIELDS};
pub use rope::{rope_inv_freq, rope_tables, rope_tables_of, Llama3Rope};
pub use sample::{MAX_SAMPLE_VOCAB, MAX_TOP_LOGPROBS};
use serde::{Deserialize, Serialize};
pub use traffic::traffic;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// table [V, D] (float), ids `[T]` (u32) -> out [T, D]. An id >= V yields a row of zeros.
    Embedding,
    /// One shard of an embedding table too large for one binding: table [Vs, D] holds vocabulary
    /// rows first..first+Vs; ids `[T]` (u32) -> out [T, D] (in-out): `out[t] = table[ids[t] - first]`
    /// where `first <= ids[t] < first + Vs`, other rows untouched. Shards covering the vocabulary
    /// together do what `Embedding` does.
    EmbeddingShard { first: usize },
    /// x [.., D], w `[D]` -> y [.., D]: y = x / sqrt(mean(x^2) + eps) * w, or * (1 + w) with
    /// `unit_offset` (Gemma / Qwen3.5 style). Per-head q/k norm is this op over [T, H, Dh].
    RmsNorm { eps: f32, unit_offset: bool },
    /// x [M, K], w [N, K] -> y [M, N] = x Wᵀ. M = 1 is decode (matvec), M > 1 prefill (GEMM).
    Linear,
    /// The MLP's down projection over its swiglu, as one op: x [M, 2K] holding (gate, up) pairs
    /// interleaved (as `SwiGlu`'s one-input form reads them), w [N, K] -> y [M, N]
    /// = swiglu(x) Wᵀ. Tested against the composition swiglu (f32) -> linear.
    SwiGluLinear,
    /// The MLP's stacked gate/up projection with its swiglu, as one op: x [M, K], w [2F, K] holding
    /// (gate, up) weight rows interleaved -> y [M, F] = swiglu of (x Wᵀ)'s (gate, up) pairs.
    /// Tested against the composition linear (f32) -> swiglu.
    LinearSwiGlu,
    /// Fused residual add + RMSNorm: a [.., D], b [.., D], w `[D]` -> sum [.., D] = a + b (rounded to
    /// sum's dtype), y [.., D] = rms_norm(sum, w). Tested against the composition add -> rms_norm.
    AddRmsNorm { eps: f32, unit_offset: bool },
    /// A residual add + RMSNorm and the projection of its normed rows, as one op (so a one-token
    /// step need not wait on a norm kernel before each projection): a [M, K], b [M, K], nw `[K]`,
    /// w [N, K] -> sum [M, K] = a + b (rounded to sum's dtype), y [M, N] = rms_norm(sum, nw) Wᵀ.
    /// The normed rows themselves are not stored. With `swiglu`, w holds (gate, up) rows interleaved
    /// (as `LinearSwiGlu`'s) and y [M, N / 2] is the swiglu of each output pair. Tested against the
    /// composition add_rms_norm (normed rows in f32) -> linear (-> swiglu over the pairs).
    AddRmsNormLinear { eps: f32, unit_offset: bool, swiglu: bool },
    /// A projection, then the residual add + RMSNorm of its output, as one op (so a device whose
    /// projection sums split-K partials in a second pass sums them inside the norm's kernel): x
    /// [M, K], w [N, K], a [M, N], nw `[N]` -> y [M, N] = x Wᵀ, sum [M, N] = a + y (rounded to
    /// sum's dtype), h [M, N] = rms_norm(sum, nw). Tested against the composition linear ->
    /// add_rms_norm.
    LinearAddRmsNorm { eps: f32, unit_offset: bool },
    /// A projection with the residual added in its epilogue, as one op (so the next projection's
    /// norm reads one row, not the two it would add): x [M, K], w [N, K], a [M, N] -> y [M, N]
    /// = a + x Wᵀ (rounded to y's dtype). Tested against the composition linear (f32) -> add.
    LinearAdd,
    /// An RMSNorm and the projection of its normed rows, as one op (the norm read inside the
    /// projection, the normed rows not stored): x [M, K], nw `[K]`, w [N, K] -> y [M, N]
    /// = rms_norm(x, nw) Wᵀ; with `swiglu`, w holds (gate, up) rows interleaved and y [M, N / 2] is
    /// the swiglu of each output pair. Tested against the composition rms_norm (f32) -> linear
    /// (-> swiglu over the pairs).
    RmsNormLinear { eps: f32, unit_offset: bool, swiglu: bool },
    /// Fused per-head q/k norm + RoPE: x [T, H, Dh], w `[Dh]`, pos, cos, sin -> y [T, H, Dh]
    /// = rope(rms_norm(x, w, eps)). Tested against the composition of the two reference ops.
    RmsNormRope { eps: f32, rotary_dim: usize },
    /// A stacked q/k/v projection's tail, as one op: x [T, Hq + 2 Hkv, Dh] (per token the q heads,
    /// then the k heads, then the v heads), w `[Dh]` or [Hq + Hkv, Dh], pos `[T]`, cos, sin, slots
    /// `[T]` (u32) -> q [T, Hq, Dh], k_pool, v_pool [NB, BS, Hkv, Dh] (in-out). The q and k heads
    /// are `RmsNormRope` of x's first Hq + Hkv heads; k and the v heads are then written to the
    /// pools as `KvWrite` at `slots` (rounded to the pool's dtype). Tested against that composition.
    RmsNormRopeKv { eps: f32, rotary_dim: usize },
    /// A stacked q/k/v projection and its tail, as one op (so a device whose projection sums
    /// split-K partials in a second pass sums them inside the tail's kernel): x [T, K], w [N, K]
    /// with N = (Hq + 2 Hkv) Dh, then nw, pos, cos, sin, slots as `RmsNormRopeKv` -> q, k_pool,
    /// v_pool as `RmsNormRopeKv`. The composition `Linear` (into f32 [T, N]) then `RmsNormRopeKv`
    /// of its rows as [T, Hq + 2 Hkv, Dh]. Tested against it.
    LinearRmsNormRopeKv { eps: f32, rotary_dim: usize },
    /// A decode step's attention from the stacked q/k/v projection, as one op: x, w, pos, cos,
    /// sin, slots as `RmsNormRopeKv`, then block_tables [S, MB], seqs [S, 3] as `PagedAttention`
    /// -> o [T, Hq, Dh], k_pool, v_pool (in-out). The composition `RmsNormRopeKv` (q in f32) then
    /// `PagedAttention { scale, block_size }` over the pools as written. Tested against it.
    RmsNormRopeKvAttention {
        eps: f32,
        rotary_dim: usize,
        scale: f32,
        block_size: usize,
    },
    /// x [T, H, Dh], pos `[T]` (u32), cos [P, R/2] (f32), sin [P, R/2] (f32) -> y [T, H, Dh].
    /// NeoX rotate-half on the first R = `rotary_dim` dims (pairs i, i + R/2); the rest pass through.
    /// Tables come from `rope_tables` (f64 on the host), so theta lives in the tables.
    Rope { rotary_dim: usize },
    /// q [T, Hq, Dh], k [S, Hkv, Dh], v [S, Hkv, Dh] -> o [T, Hq, Dh]. S is the cache capacity.
    /// Query t sits at position n_past + t and attends causally to keys 0..=n_past+t.
    /// Query head h reads kv head h / (Hq / Hkv) (GQA). Scores scaled by `scale`, softmax in f32.
    Attention { n_past: usize, scale: f32 },
    /// gate [..], up [..] -> y [..] = silu(gate) * up; or one input x [.., 2F] holding (gate, up)
    /// pairs interleaved (x[.., 2j] = gate_j, x[.., 2j+1] = up_j, as a fused gate/up projection
    /// writes them) -> y [.., F]
    SwiGlu,
    /// a [..], b [..] -> y [..] = a + b (same shape; the residual add)
    Add,
    /// x [R, C] -> y [R, C], softmax over each row (f32 math)
    Softmax,
    /// x [R, C] -> idx `[R]` (u32): index of the row maximum, the lowest index on ties
    Argmax,
    /// x [R, C] -> values [R, k] (x's dtype), idx [R, k] (u32): the k largest, descending,
    /// ties broken by the lower index
    TopK { k: usize },
    /// x -> y, same dtype, same element count, bit-exact (shapes may differ: reshape on copy)
    Copy,
    /// x -> y, float to float dtype, round to nearest even, same element count
    Cast,
    /// Depthwise causal conv1d over the sequence, then SiLU (Qwen3.5's linear-attention conv):
    /// x [T, C], w [C, K], state [K-1, C] -> y [T, C], state_out [K-1, C].
    /// With xp = cat(state, x) ([K-1+T, C], the previous K-1 inputs oldest first):
    /// y[t, c] = silu(sum_j w[c, j] * xp[t + j, c]) (w[c, K-1] weighs the current token; a
    /// cross-correlation, as F.conv1d), state_out = the last K-1 rows of xp. A fresh sequence
    /// passes a zero state.
    CausalConv1d,
    /// The decode step of `CausalConv1d`: the same contract with T = 1; the state rolls by one
    /// token (state_out = cat(state[1..], x)).
    CausalConv1dUpdate,
    /// The gated delta rule (Qwen3.5 Gated DeltaNet), step by step over the tokens:
    /// qkv [T, 2*nk*dk + nv*dv] (channels [q | k | v], each head-major: the conv output),
    /// b [T, nv], a [T, nv], a_log `[nv]`, dt_bias `[nv]`, state [nv, dk, dv] (f32)
    /// -> o [T, nv, dv], state_out [nv, dk, dv] (f32).
    /// Per token t and value head h (key head h / (nv / nk): transformers' repeat_interleave):
    /// q, k = l2norm(q), l2norm(k) (x / sqrt(sum x^2 + 1e-6)), q /= sqrt(dk);
    /// beta = sigmoid(b), g = -exp(a_log) * softplus(a + dt_bias);
    /// S *= exp(g); delta = (v - kᵀS) * beta; S += k deltaᵀ; o = qᵀS (read after the update).
    GdnRecurrent,
    /// The same rule and contract as `GdnRecurrent`, computed in chunks of `GDN_CHUNK` tokens (the
    /// prefill form: intra-chunk work as matrix products, the state carried between chunks). The
    /// reference for both is the recurrence.
    GdnChunked,
    /// Gated RMSNorm (Qwen3.5's linear-attention output norm): x [.., D], z [.., D], w `[D]` -> y =
    /// x / sqrt(mean(x^2) + eps) * w * silu(z) (norm before gate; a plain weight, not 1 + w).
    RmsNormGated { eps: f32 },
    /// Qwen3.5's full-attention block between the projections and o_proj, as one op:
    /// qg [T, Hq, 2*Dh] (per head: query | output gate, as q_proj lays them out), k [T, Hkv, Dh],
    /// v [T, Hkv, Dh], q_norm `[Dh]`, k_norm `[Dh]`, cos [P, R/2] (f32), sin [P, R/2] (f32)
    /// -> o [T, Hq, Dh], k_cache [S, Hkv, Dh], v_cache [S, Hkv, Dh].
    /// q = rope(rms_norm(q, 1 + q_norm)), k = rope(rms_norm(k, 1 + k_norm)) at positions
    /// n_past + t, NeoX rotate-half on the first R = `rotary_dim` dims; k and v are written into
    /// cache rows n_past..n_past+T (the caches are in-out: rows below n_past are read, rows past
    /// n_past+T untouched); o = attention(q, cache, n_past, scale) * sigmoid(gate).
    GatedAttention {
        n_past: usize,
        scale: f32,
        eps: f32,
        rotary_dim: usize,
    },
    /// Writes new keys and values into a layer's paged KV pools (vLLM's reshape_and_cache):
    /// k [T, Hkv, Dh], v [T, Hkv, Dh], slots `[T]` (u32) -> k_pool, v_pool [NB, BS, Hkv, Dh]
    /// (in-out; f32, f16 or bf16). Token t's rows land at pool row slots[t] (= block * BS +
    /// offset), rounded to the pool's dtype (nearest even, as `Cast`); every other row is untouched.
    /// Slots must be < NB * BS and distinct (`check_slots`; a kernel skips a slot out of range).
    KvWrite,
    /// Causal GQA attention of a packed batch of sequences over paged KV pools:
    /// q [T, Hq, Dh], k_pool [NB, BS, Hkv, Dh], v_pool [NB, BS, Hkv, Dh] (BS = `block_size`),
    /// block_tables [S, MB] (u32 block ids), seqs [S, 3] (u32: first query row, query count,
    /// kv length) -> o [T, Hq, Dh]. The S sequences' query rows are packed one after another
    /// (`check_paged_batch` states every rule). Query i of sequence s sits at position
    /// kv_len - q_count + i and attends to its keys 0..=position, key j being pool row
    /// block_tables[s][j / BS] * BS + j % BS; query head h reads kv head h / (Hq / Hkv). Scores
    /// scaled by `scale`. Nothing past a sequence's kv_len is read (unused pool rows may hold NaN).
    /// Decode (q_count 1), prefill and chunked prefill (a chunk after a cached prefix) are this op;
    /// a row's result depends only on its own query and keys (batch invariance, paged_attention.wgsl).
    PagedAttention { scale: f32, block_size: usize },
    /// Qwen3.5's gated full attention over paged pools: `GatedAttention`'s contract with the
    /// contiguous cache replaced by the pools and the batch description of `PagedAttention`:
    /// qg [T, Hq, 2*Dh], k [T, Hkv, Dh], v [T, Hkv, Dh], q_norm `[Dh]`, k_norm `[Dh]`,
    /// cos [P, R/2] (f32), sin [P, R/2] (f32), block_tables [S, MB] (u32), seqs [S, 3] (u32)
    /// -> o [T, Hq, Dh], k_pool, v_pool [NB, BS, Hkv, Dh] (in-out). Each token's position comes
    /// from its sequence (kv_len - q_count + i); q and k are normed (x̂ (1 + w)) and rotated there;
    /// k and v are written (rounded to the pool dtype) to the pool row its block table gives that
    /// position; then `PagedAttention` over the pools, times sigmoid(gate).
    PagedGatedAttention {
        scale: f32,
        block_size: usize,
        eps: f32,
        rotary_dim: usize,
    },
    /// Repetition, presence and frequency penalties over rows of logits, one row per sequence,
    /// each row with its own parameters (rows of a batch may differ; a row with the off values
    /// (1, 1, 0, 0) is copied): logits [R, V] f32, counts [R, V] u32, params [R, 4] f32
    /// -> out [R, V] f32.
    /// counts[r, v] = how often token v occurs in sequence r's output, with `PROMPT_SEEN` (bit 31)
    /// set when it occurs in the prompt. Row r of params = (rep, rep_inv, presence, frequency), where
    /// rep_inv is 1 / rep rounded to f32 by the caller (`sampler::penalty_params`): the kernels
    /// multiply because a WGSL division is not correctly rounded, so every device agrees bit for bit.
    /// For a token with counts != 0 and a finite logit l (in this order, as vLLM applies them):
    /// x = l * rep_inv if l > 0 else l * rep; then where the output count n = counts & !PROMPT_SEEN
    /// is > 0: x = x - frequency * n, x = x - presence; every operation rounded to f32 on its own
    /// (no fused multiply-add). Every other element (an unseen token, a non-finite logit) is copied.
    Penalties,
    /// Min-p over rows of logits, one row per sequence: logits [R, V] f32, margin [R, 1] f32
    /// -> out [R, V] f32. With m the row's largest non-NaN logit, an element l is kept when
    /// l >= m - margin (the subtraction rounded to f32) and becomes -inf otherwise (NaN too; a row
    /// of NaN becomes -inf). margin = +inf (min-p off) copies the row. Min-p keeps the tokens whose
    /// probability at temperature T is >= min_p * the top one's, i.e. l >= m + T ln(min_p): the
    /// caller passes margin = -T ln(min_p) (`sampler::min_p_margin`), computed on the host, so the
    /// kernels need no logarithm and every device keeps the same tokens. margin must be >= 0.
    MinP,
    /// `CausalConv1d` over a packed batch of sequences, each with its state in a slot of a pool
    /// (hybrid.rs states the layout): x [T, C], w [C, K], seqs [S, 4] (u32: first row, token
    /// count, state slot, fresh) -> y [T, C], conv_pool [N, K-1, C] (f32, in-out). Per sequence,
    /// with state = its slot (zero when fresh, the slot not read) and its rows of x, the contract
    /// of `CausalConv1d`; state_out goes back to its slot. Slots no sequence names are untouched.
    /// A token's output depends only on its own sequence's inputs (batch and chunking invariant:
    /// the state holds past inputs exactly).
    CausalConv1dBatch,
    /// The gated delta rule over a packed batch of sequences with per-sequence state slots:
    /// qkv [T, 2*nk*dk + nv*dv], b [T, nv], a [T, nv], a_log `[nv]`, dt_bias `[nv]`, seqs [S, 4]
    /// (u32, as `CausalConv1dBatch`) -> o [T, nv, dv], rec_pool [N, nv, dk, dv] (f32, in-out).
    /// Per sequence, `GdnRecurrent`'s contract over its rows with state = its slot (zero when
    /// fresh); the final state goes back to its slot; other slots untouched. Every token, prefill
    /// or decode, takes the recurrent form, so its bits depend only on its sequence's earlier
    /// tokens: not on the batch, nor on how the scheduler chunks the prompt (the chunked form's
    /// bits depend on where its chunks start).
    GdnBatch,
    /// A linear-attention layer's core as one op (so a decode step need not wait on a kernel
    /// between its parts): x [T, C] (the in-projection's conv channels), conv_w [C, K], b, a, a_log,
    /// dt_bias, seqs as `GdnBatch`, z [T, nv, dv], norm_w `[dv]` -> y [T, nv, dv], rec_pool
    /// (in-out), conv_pool (in-out). The composition (`gdn_conv_norm_parts`):
    /// `CausalConv1dBatch` over x, conv_w, seqs into u (f32) and conv_pool; `GdnBatch` over u and
    /// the gates into o (f32) and rec_pool; `RmsNormGated { eps }` over o, z, norm_w into y.
    /// Tested against it.
    GdnConvNorm { eps: f32 },
    /// One token per row of logits, chosen on the device: logits [R, V] f32 (V < 2^19),
    /// params [R, 4] f32 = (scale, top_k, top_p, u) -> ids [R, 1 + k] u32, logprobs [R, 1 + k] f32.
    /// Column 0 is the chosen token, columns 1..=k the k best by logit; logprobs are their
    /// log-softmax at temperature 1 (f32, NaN for a row without a finite maximum).
    /// The order is descending logit, ties to the lower id (NaN last). A row is greedy (its first
    /// token in that order, as `Argmax`) when scale is not a normal positive number or top_k is 1.
    /// Otherwise scale = log2(e) / T (`sampler::sample_params` computes it in f64 and rounds once:
    /// the kernels need no division or exp), top_k an integer (0 or >= V: all), top_p in (0, 1] and
    /// u in [0, 1) read as 24-bit fractions, and with m the row's maximum each token weighs
    /// W = 2^-((m - l) * scale) in Q45 made by integer operations (`cpu::sample::weight`, exact on
    /// every device; 0 below 2^-45 of the top); Z = sum W; the kept tokens are the first n of the
    /// order, n the smaller of top_k and the shortest prefix whose mass reaches floor(Z top_p)
    /// (at least one); M their mass; the token is the first kept one whose running mass exceeds
    /// floor(M u). Every choice is integer arithmetic, so ids agree bit for bit on every device.
    Sample { k: usize },
}

/// The "seen in the prompt" flag of `Op::Penalties`' counts (the low 31 bits count the output).
pub const PROMPT_SEEN: u32 = 1 << 31;

/// Chunk length of `Op::GdnChunked` (transformers' torch_chunk_gated_delta_rule uses 64).
pub const GDN_CHUNK: usize = 64;

/// l2norm's epsilon in the gated delta rule (inside the square root, transformers' l2norm).
pub const GDN_L2_EPS: f64 = 1e-6;

/// The kinds of op, without parameters, in a fixed order (rows of the support matrix).
pub const OP_NAMES: [&str; 33] = [
    "embedding",
    "rms_norm",
    "add_rms_norm",
    "rms_norm_rope",
    "linear",
    "rope",
    "attention",
    "swiglu",
    "add",
    "softmax",
    "argmax",
    "topk",
    "copy",
    "cast",
    "embedding_shard",
    "causal_conv1d",
    "causal_conv1d_update",
    "gdn_recurrent",
    "gdn_chunked",
    "rms_norm_gated",
    "gated_attention",
    "kv_write",
    "paged_attention",
    "paged_gated_attention",
    "penalties",
    "min_p",
    "causal_conv1d_batch",
    "gdn_batch",
    "sample",
    "rms_norm_rope_kv",
    "swiglu_linear",
    "add_rms_norm_linear",
    "gdn_conv_norm",
];

impl Op {
    /// `RmsNormRopeKvAttention`'s two ops (rms_norm_rope_kv, then paged_attention over its q);
    /// None for every other op.
    pub fn rope_kv_attention_parts(&self) -> Option<(Op, Op)> {
        let Op::RmsNormRopeKvAttention {
            eps,
            rotary_dim,
            scale,
            block_size,
        } = *self
        else {
            return None;
        };
        Some((
            Op::RmsNormRopeKv { eps, rotary_dim },
            Op::PagedAttention { scale, block_size },
        ))
    }

    /// `GdnConvNorm`'s three ops, in order: causal_conv1d_batch, gdn_batch, rms_norm_gated (see
    /// the op for their operands); None for every other op.
    pub fn gdn_conv_norm_parts(&self) -> Option<[Op; 3]> {
        let Op::GdnConvNorm { eps } = *self else {
            return None;
        };
        Some([Op::CausalConv1dBatch, Op::GdnBatch, Op::RmsNormGated { eps }])
    }

    pub fn name(&self) -> &'static str {
        match self {
            Op::Embedding => "embedding",
            Op::EmbeddingShard { .. } => "embedding_shard",
            Op::RmsNorm { .. } => "rms_norm",
            Op::RmsNormRope { .. } => "rms_norm_rope",
            Op::RmsNormRopeKv { .. } => "rms_norm_rope_kv",
            Op::LinearRmsNormRopeKv { .. } => "linear_rms_norm_rope_kv",
            Op::RmsNormRopeKvAttention { .. } => "rms_norm_rope_kv_attention",
            Op::AddRmsNorm { .. } => "add_rms_norm",
            Op::AddRmsNormLinear { swiglu: false, .. } => "add_rms_norm_linear",
            Op::AddRmsNormLinear { swiglu: true, .. } => "add_rms_norm_linear_swiglu",
            Op::LinearAddRmsNorm { .. } => "linear_add_rms_norm",
            Op::LinearAdd => "linear_add",
            Op::RmsNormLinear { swiglu: false, .. } => "rms_norm_linear",
            Op::RmsNormLinear { swiglu: true, .. } => "rms_norm_linear_swiglu",
            Op::Linear => "linear",
            Op::SwiGluLinear => "swiglu_linear",
            Op::LinearSwiGlu => "linear_swiglu",
            Op::Rope { .. } => "rope",
            Op::Attention { .. } => "attention",
            Op::SwiGlu => "swiglu",
            Op::Add => "add",
            Op::Softmax => "softmax",
            Op::Argmax => "argmax",
            Op::TopK { .. } => "topk",
            Op::Copy => "copy",
            Op::Cast => "cast",
            Op::CausalConv1d => "causal_conv1d",
            Op::CausalConv1dUpdate => "causal_conv1d_update",
            Op::GdnRecurrent => "gdn_recurrent",
            Op::GdnChunked => "gdn_chunked",
            Op::RmsNormGated { .. } => "rms_norm_gated",
            Op::GatedAttention { .. } => "gated_attention",
            Op::KvWrite => "kv_write",
            Op::PagedAttention { .. } => "paged_attention",
            Op::PagedGatedAttention { .. } => "paged_gated_attention",
            Op::Penalties => "penalties",
            Op::MinP => "min_p",
            Op::CausalConv1dBatch => "causal_conv1d_batch",
            Op::GdnBatch => "gdn_batch",
            Op::GdnConvNorm { .. } => "gdn_conv_norm",
            Op::Sample { .. } => "sample",
        }
    }
}
