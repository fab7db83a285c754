//! The one `Op` enum. Every match on it is exhaustive: a new op does not compile until every
//! backend (and the harness) says something about it.
//!
//! Shapes are row-major and contiguous. `OpDesc::check` is the single statement of each op's
//! contract (input/output count, dtypes, shapes); backends call it before anything else.
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::{numel, shape_str, Tensor};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// table [V, D] (float), ids [T] (u32) -> out [T, D]. An id >= V yields a row of zeros.
    Embedding,
    /// One shard of an embedding table too large for one binding: table [Vs, D] holds vocabulary
    /// rows first..first+Vs; ids [T] (u32) -> out [T, D] (in-out): out[t] = table[ids[t] - first]
    /// where first <= ids[t] < first + Vs, other rows untouched. Shards covering the vocabulary
    /// together do what `Embedding` does.
    EmbeddingShard { first: usize },
    /// x [.., D], w [D] -> y [.., D]: y = x / sqrt(mean(x^2) + eps) * w, or * (1 + w) with
    /// `unit_offset` (Gemma / Qwen3.5 style). Per-head q/k norm is this op over [T, H, Dh].
    RmsNorm { eps: f32, unit_offset: bool },
    /// x [M, K], w [N, K] -> y [M, N] = x Wᵀ. M = 1 is decode (matvec), M > 1 prefill (GEMM).
    Linear,
    /// Fused residual add + RMSNorm: a [.., D], b [.., D], w [D] -> sum [.., D] = a + b (rounded to
    /// sum's dtype), y [.., D] = rms_norm(sum, w). Tested against the composition add -> rms_norm.
    AddRmsNorm { eps: f32, unit_offset: bool },
    /// Fused per-head q/k norm + RoPE: x [T, H, Dh], w [Dh], pos, cos, sin -> y [T, H, Dh]
    /// = rope(rms_norm(x, w, eps)). Tested against the composition of the two reference ops.
    RmsNormRope { eps: f32, rotary_dim: usize },
    /// x [T, H, Dh], pos [T] (u32), cos [P, R/2] (f32), sin [P, R/2] (f32) -> y [T, H, Dh].
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
    /// x [R, C] -> idx [R] (u32): index of the row maximum, the lowest index on ties
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
    /// b [T, nv], a [T, nv], a_log [nv], dt_bias [nv], state [nv, dk, dv] (f32)
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
    /// Gated RMSNorm (Qwen3.5's linear-attention output norm): x [.., D], z [.., D], w [D] -> y =
    /// x / sqrt(mean(x^2) + eps) * w * silu(z) (norm before gate; a plain weight, not 1 + w).
    RmsNormGated { eps: f32 },
    /// Qwen3.5's full-attention block between the projections and o_proj, as one op:
    /// qg [T, Hq, 2*Dh] (per head: query | output gate, as q_proj lays them out), k [T, Hkv, Dh],
    /// v [T, Hkv, Dh], q_norm [Dh], k_norm [Dh], cos [P, R/2] (f32), sin [P, R/2] (f32)
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
}

/// Chunk length of `Op::GdnChunked` (transformers' torch_chunk_gated_delta_rule uses 64).
pub const GDN_CHUNK: usize = 64;

/// l2norm's epsilon in the gated delta rule (inside the square root, transformers' l2norm).
pub const GDN_L2_EPS: f64 = 1e-6;

/// The kinds of op, without parameters, in a fixed order (rows of the support matrix).
pub const OP_NAMES: [&str; 21] = [
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
];

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Embedding => "embedding",
            Op::EmbeddingShard { .. } => "embedding_shard",
            Op::RmsNorm { .. } => "rms_norm",
            Op::RmsNormRope { .. } => "rms_norm_rope",
            Op::AddRmsNorm { .. } => "add_rms_norm",
            Op::Linear => "linear",
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
        }
    }
}

/// dtype + shape of one operand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorDesc {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl TensorDesc {
    pub fn new(dtype: DType, shape: &[usize]) -> Self {
        TensorDesc {
            dtype,
            shape: shape.to_vec(),
        }
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    pub fn nbytes(&self) -> usize {
        self.dtype.nbytes(self.numel())
    }
}

/// What a backend is asked about: the op with its parameters, and every operand's dtype and shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpDesc {
    pub op: Op,
    pub inputs: Vec<TensorDesc>,
    pub outputs: Vec<TensorDesc>,
}

impl OpDesc {
    pub fn new(op: Op, inputs: Vec<TensorDesc>, outputs: Vec<TensorDesc>) -> Self {
        OpDesc { op, inputs, outputs }
    }
    pub fn of(op: &Op, inputs: &[&Tensor], outputs: &[&Tensor]) -> Self {
        let d = |t: &&Tensor| TensorDesc::new(t.dtype, &t.shape);
        OpDesc {
            op: op.clone(),
            inputs: inputs.iter().map(d).collect(),
            outputs: outputs.iter().map(d).collect(),
        }
    }
    /// `rms_norm(bf16)` / `linear(f32,bf16->f32)`: the op and its dtypes, for messages and matrices.
    pub fn label(&self) -> String {
        let ins: Vec<&str> = self.inputs.iter().map(|t| t.dtype.name()).collect();
        let outs: Vec<&str> = self.outputs.iter().map(|t| t.dtype.name()).collect();
        format!("{}({}->{})", self.op.name(), ins.join(","), outs.join(","))
    }

    /// Checks operand count, dtypes and shapes against the op's contract.
    pub fn check(&self) -> Result<()> {
        let name = self.op.name();
        let bad = |detail: String| Err(Error::shape(name, detail));
        let (ni, no) = match &self.op {
            Op::Embedding | Op::EmbeddingShard { .. } | Op::Linear | Op::SwiGlu | Op::Add | Op::RmsNorm { .. } => {
                (2, 1)
            }
            Op::Rope { .. } => (4, 1),
            Op::RmsNormRope { .. } => (5, 1),
            Op::AddRmsNorm { .. } => (3, 2),
            Op::Attention { .. } => (3, 1),
            Op::Softmax | Op::Argmax | Op::Copy | Op::Cast => (1, 1),
            Op::TopK { .. } => (1, 2),
            Op::CausalConv1d | Op::CausalConv1dUpdate => (3, 2),
            Op::GdnRecurrent | Op::GdnChunked => (6, 2),
            Op::RmsNormGated { .. } => (3, 1),
            Op::GatedAttention { .. } => (7, 3),
        };
        let ni = if self.op == Op::SwiGlu && self.inputs.len() == 1 {
            1
        } else {
            ni
        };
        if self.inputs.len() != ni || self.outputs.len() != no {
            return bad(format!(
                "expects {ni} inputs and {no} outputs, got {} and {}",
                self.inputs.len(),
                self.outputs.len()
            ));
        }
        let i = &self.inputs;
        let o = &self.outputs;
        let float = |t: &TensorDesc, what: &str| -> Result<()> {
            if t.dtype.is_float() {
                Ok(())
            } else {
                Err(Error::shape(
                    name,
                    format!("{what} must be a float dtype, got {}", t.dtype),
                ))
            }
        };
        // a weight may also be block-quantized when its rows are whole blocks (`len` elements, named `dim`)
        let float_or_quant = |t: &TensorDesc, what: &str, len: usize, dim: &str| -> Result<()> {
            let qk = t.dtype.block().0;
            if !t.dtype.is_quant() {
                return float(t, what);
            }
            if len % qk != 0 {
                return Err(Error::shape(
                    name,
                    format!(
                        "{what} in {} needs {dim} a multiple of its {qk}-element block, got {dim} = {len}",
                        t.dtype
                    ),
                ));
            }
            Ok(())
        };
        let dtype_is = |t: &TensorDesc, d: DType, what: &str| -> Result<()> {
            if t.dtype == d {
                Ok(())
            } else {
                Err(Error::shape(name, format!("{what} must be {d}, got {}", t.dtype)))
            }
        };
        let same_shape = |a: &TensorDesc, b: &TensorDesc, what: &str| -> Result<()> {
            if a.shape == b.shape {
                Ok(())
            } else {
                Err(Error::shape(
                    name,
                    format!("{what}: [{}] vs [{}]", shape_str(&a.shape), shape_str(&b.shape)),
                ))
            }
        };
        match &self.op {
            Op::Embedding | Op::EmbeddingShard { .. } => {
                float_or_quant(&i[0], "table", i[0].shape.get(1).copied().unwrap_or(0), "D")?;
                dtype_is(&i[1], DType::U32, "ids")?;
                float(&o[0], "out")?;
                if i[0].shape.len() != 2 || i[1].shape.len() != 1 {
                    return bad("table [V, D], ids [T]".into());
                }
                if o[0].shape != [i[1].shape[0], i[0].shape[1]] {
                    return bad(format!("out must be [T, D], got [{}]", shape_str(&o[0].shape)));
                }
            }
            Op::RmsNorm { .. } => {
                float(&i[0], "x")?;
                float(&i[1], "w")?;
                float(&o[0], "y")?;
                let d = *i[0].shape.last().unwrap_or(&0);
                if i[1].shape != [d] || d == 0 {
                    return bad(format!("w must be [{d}], got [{}]", shape_str(&i[1].shape)));
                }
                same_shape(&i[0], &o[0], "x vs y")?;
            }
            Op::Linear => {
                float(&i[0], "x")?;
                float(&o[0], "y")?;
                float_or_quant(&i[1], "w", i[1].shape.get(1).copied().unwrap_or(0), "K")?;
                if i[0].shape.len() != 2 || i[1].shape.len() != 2 || i[0].shape[1] != i[1].shape[1] {
                    return bad(format!(
                        "x [M, K] and w [N, K], got [{}] and [{}]",
                        shape_str(&i[0].shape),
                        shape_str(&i[1].shape)
                    ));
                }
                if o[0].shape != [i[0].shape[0], i[1].shape[0]] {
                    return bad("y must be [M, N]".into());
                }
            }
            Op::Rope { rotary_dim } => {
                float(&i[0], "x")?;
                dtype_is(&i[1], DType::U32, "pos")?;
                dtype_is(&i[2], DType::F32, "cos")?;
                dtype_is(&i[3], DType::F32, "sin")?;
                float(&o[0], "y")?;
                if i[0].shape.len() != 3 {
                    return bad("x must be [T, H, Dh]".into());
                }
                let (t, dh) = (i[0].shape[0], i[0].shape[2]);
                if *rotary_dim == 0 || rotary_dim % 2 != 0 || *rotary_dim > dh {
                    return bad(format!("rotary_dim {rotary_dim} must be even, > 0, <= head_dim {dh}"));
                }
                if i[1].shape != [t] {
                    return bad("pos must be [T]".into());
                }
                if i[2].shape.len() != 2 || i[2].shape[1] != rotary_dim / 2 || i[2].shape != i[3].shape {
                    return bad(format!("cos and sin must be [P, {}]", rotary_dim / 2));
                }
                same_shape(&i[0], &o[0], "x vs y")?;
            }
            Op::AddRmsNorm { eps, unit_offset } => {
                let add = OpDesc::new(Op::Add, vec![i[0].clone(), i[1].clone()], vec![o[0].clone()]);
                add.check()?;
                let norm = OpDesc::new(
                    Op::RmsNorm {
                        eps: *eps,
                        unit_offset: *unit_offset,
                    },
                    vec![o[0].clone(), i[2].clone()],
                    vec![o[1].clone()],
                );
                norm.check()?;
            }
            Op::RmsNormRope { eps, rotary_dim } => {
                let norm = OpDesc::new(
                    Op::RmsNorm {
                        eps: *eps,
                        unit_offset: false,
                    },
                    vec![i[0].clone(), i[1].clone()],
                    o.clone(),
                );
                norm.check()?;
                let rope = OpDesc::new(
                    Op::Rope {
                        rotary_dim: *rotary_dim,
                    },
                    vec![i[0].clone(), i[2].clone(), i[3].clone(), i[4].clone()],
                    o.clone(),
                );
                rope.check()?;
            }
            Op::Attention { n_past, .. } => {
                for (t, w) in [(&i[0], "q"), (&i[1], "k"), (&i[2], "v"), (&o[0], "o")] {
                    float(t, w)?;
                }
                if i.iter().any(|t| t.shape.len() != 3) {
                    return bad("q [T, Hq, Dh], k/v [S, Hkv, Dh]".into());
                }
                let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
                let (s, hkv) = (i[1].shape[0], i[1].shape[1]);
                same_shape(&i[1], &i[2], "k vs v")?;
                if i[1].shape[2] != dh {
                    return bad("k head_dim differs from q".into());
                }
                if hkv == 0 || hq % hkv != 0 {
                    return bad(format!("Hq {hq} must be a multiple of Hkv {hkv}"));
                }
                if n_past + t > s {
                    return bad(format!("n_past {n_past} + T {t} exceeds cache capacity {s}"));
                }
                same_shape(&i[0], &o[0], "q vs o")?;
            }
            Op::SwiGlu if i.len() == 1 => {
                float(&i[0], "x")?;
                float(&o[0], "y")?;
                let (xs, ys) = (&i[0].shape, &o[0].shape);
                let ok = !xs.is_empty()
                    && xs.len() == ys.len()
                    && xs[..xs.len() - 1] == ys[..ys.len() - 1]
                    && xs[xs.len() - 1] == 2 * ys[ys.len() - 1];
                if !ok {
                    return bad(format!(
                        "paired x [.., 2F] -> y [.., F], got [{}] -> [{}]",
                        shape_str(xs),
                        shape_str(ys)
                    ));
                }
            }
            Op::SwiGlu | Op::Add => {
                float(&i[0], "a")?;
                float(&i[1], "b")?;
                float(&o[0], "y")?;
                same_shape(&i[0], &i[1], "a vs b")?;
                same_shape(&i[0], &o[0], "a vs y")?;
            }
            Op::Softmax => {
                float(&i[0], "x")?;
                float(&o[0], "y")?;
                if i[0].shape.len() != 2 {
                    return bad("x must be [R, C]".into());
                }
                same_shape(&i[0], &o[0], "x vs y")?;
            }
            Op::Argmax => {
                float(&i[0], "x")?;
                dtype_is(&o[0], DType::U32, "idx")?;
                if i[0].shape.len() != 2 || o[0].shape != [i[0].shape[0]] {
                    return bad("x [R, C] -> idx [R]".into());
                }
            }
            Op::TopK { k } => {
                float(&i[0], "x")?;
                dtype_is(&o[1], DType::U32, "idx")?;
                dtype_is(&o[0], i[0].dtype, "values")?;
                if i[0].shape.len() != 2 {
                    return bad("x must be [R, C]".into());
                }
                if *k == 0 || *k > i[0].shape[1] {
                    return bad(format!("k {k} must be in 1..={}", i[0].shape[1]));
                }
                let want = [i[0].shape[0], *k];
                if o[0].shape != want || o[1].shape != want {
                    return bad("values and idx must be [R, k]".into());
                }
            }
            Op::Copy => {
                dtype_is(&o[0], i[0].dtype, "y")?;
                if i[0].numel() != o[0].numel() {
                    return bad("element counts differ".into());
                }
            }
            Op::Cast => {
                float(&i[0], "x")?;
                float(&o[0], "y")?;
                if i[0].numel() != o[0].numel() {
                    return bad("element counts differ".into());
                }
            }
            Op::CausalConv1d | Op::CausalConv1dUpdate => {
                for (t, w) in [
                    (&i[0], "x"),
                    (&i[1], "w"),
                    (&i[2], "state"),
                    (&o[0], "y"),
                    (&o[1], "state_out"),
                ] {
                    float(t, w)?;
                }
                if i[0].shape.len() != 2 || i[1].shape.len() != 2 {
                    return bad(format!(
                        "x [T, C] and w [C, K], got [{}] and [{}]",
                        shape_str(&i[0].shape),
                        shape_str(&i[1].shape)
                    ));
                }
                let (t, c, k) = (i[0].shape[0], i[0].shape[1], i[1].shape[1]);
                if i[1].shape[0] != c || k < 2 {
                    return bad(format!(
                        "w must be [{c}, K] with K >= 2, got [{}]",
                        shape_str(&i[1].shape)
                    ));
                }
                if self.op == Op::CausalConv1dUpdate && t != 1 {
                    return bad(format!("the update takes one token, got T = {t}"));
                }
                if i[2].shape != [k - 1, c] {
                    return bad(format!(
                        "state must be [{}, {c}], got [{}]",
                        k - 1,
                        shape_str(&i[2].shape)
                    ));
                }
                same_shape(&i[0], &o[0], "x vs y")?;
                same_shape(&i[2], &o[1], "state vs state_out")?;
            }
            Op::GdnRecurrent | Op::GdnChunked => {
                for (t, w) in [
                    (&i[0], "qkv"),
                    (&i[1], "b"),
                    (&i[2], "a"),
                    (&i[3], "a_log"),
                    (&i[4], "dt_bias"),
                    (&o[0], "o"),
                ] {
                    float(t, w)?;
                }
                dtype_is(&i[5], DType::F32, "state")?;
                dtype_is(&o[1], DType::F32, "state_out")?;
                gdn_dims(&i[0].shape, &i[5].shape).map_err(|d| Error::shape(name, d))?;
                let (t, nv) = (i[0].shape[0], i[5].shape[0]);
                for (x, w) in [(&i[1], "b"), (&i[2], "a")] {
                    if x.shape != [t, nv] {
                        return bad(format!("{w} must be [{t}, {nv}], got [{}]", shape_str(&x.shape)));
                    }
                }
                for (x, w) in [(&i[3], "a_log"), (&i[4], "dt_bias")] {
                    if x.shape != [nv] {
                        return bad(format!("{w} must be [{nv}], got [{}]", shape_str(&x.shape)));
                    }
                }
                if o[0].shape != [t, nv, i[5].shape[2]] {
                    return bad(format!(
                        "o must be [{t}, {nv}, {}], got [{}]",
                        i[5].shape[2],
                        shape_str(&o[0].shape)
                    ));
                }
                same_shape(&i[5], &o[1], "state vs state_out")?;
            }
            Op::RmsNormGated { .. } => {
                float(&i[0], "x")?;
                float(&i[1], "z")?;
                float(&i[2], "w")?;
                float(&o[0], "y")?;
                let d = *i[0].shape.last().unwrap_or(&0);
                if i[2].shape != [d] || d == 0 {
                    return bad(format!("w must be [{d}], got [{}]", shape_str(&i[2].shape)));
                }
                same_shape(&i[0], &i[1], "x vs z")?;
                same_shape(&i[0], &o[0], "x vs y")?;
            }
            Op::GatedAttention { n_past, rotary_dim, .. } => {
                for (t, w) in [
                    (&i[0], "qg"),
                    (&i[1], "k"),
                    (&i[2], "v"),
                    (&i[3], "q_norm"),
                    (&i[4], "k_norm"),
                    (&o[0], "o"),
                    (&o[1], "k_cache"),
                    (&o[2], "v_cache"),
                ] {
                    float(t, w)?;
                }
                dtype_is(&i[5], DType::F32, "cos")?;
                dtype_is(&i[6], DType::F32, "sin")?;
                if i[0].shape.len() != 3 || i[1].shape.len() != 3 || o[1].shape.len() != 3 {
                    return bad("qg [T, Hq, 2*Dh], k/v [T, Hkv, Dh], caches [S, Hkv, Dh]".into());
                }
                let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2] / 2);
                let (s, hkv) = (o[1].shape[0], o[1].shape[1]);
                if dh == 0 || i[0].shape[2] != 2 * dh {
                    return bad(format!("qg's last dim must be 2 * head_dim, got {}", i[0].shape[2]));
                }
                if i[1].shape != [t, hkv, dh] {
                    return bad(format!(
                        "k must be [{t}, {hkv}, {dh}], got [{}]",
                        shape_str(&i[1].shape)
                    ));
                }
                same_shape(&i[1], &i[2], "k vs v")?;
                if o[1].shape[2] != dh {
                    return bad(format!(
                        "caches must be [S, {hkv}, {dh}], got [{}]",
                        shape_str(&o[1].shape)
                    ));
                }
                same_shape(&o[1], &o[2], "k_cache vs v_cache")?;
                for (x, w) in [(&i[3], "q_norm"), (&i[4], "k_norm")] {
                    if x.shape != [dh] {
                        return bad(format!("{w} must be [{dh}], got [{}]", shape_str(&x.shape)));
                    }
                }
                if hkv == 0 || hq % hkv != 0 {
                    return bad(format!("Hq {hq} must be a multiple of Hkv {hkv}"));
                }
                if *rotary_dim == 0 || rotary_dim % 2 != 0 || *rotary_dim > dh {
                    return bad(format!("rotary_dim {rotary_dim} must be even, > 0, <= head_dim {dh}"));
                }
                if i[5].shape.len() != 2 || i[5].shape[1] != rotary_dim / 2 || i[5].shape != i[6].shape {
                    return bad(format!("cos and sin must be [P, {}]", rotary_dim / 2));
                }
                if n_past + t > s {
                    return bad(format!("n_past {n_past} + T {t} exceeds cache capacity {s}"));
                }
                if n_past + t > i[5].shape[0] {
                    return bad(format!(
                        "positions up to {} exceed the RoPE table of {}",
                        n_past + t,
                        i[5].shape[0]
                    ));
                }
                if o[0].shape != [t, hq, dh] {
                    return bad(format!("o must be [{t}, {hq}, {dh}], got [{}]", shape_str(&o[0].shape)));
                }
            }
        }
        Ok(())
    }
}

/// (T, nk, nv, dk, dv) of the gated delta rule from qkv [T, 2*nk*dk + nv*dv] and state [nv, dk, dv].
pub fn gdn_dims(qkv: &[usize], state: &[usize]) -> std::result::Result<(usize, usize, usize, usize, usize), String> {
    if qkv.len() != 2 || state.len() != 3 {
        return Err(format!(
            "qkv [T, C] and state [nv, dk, dv], got [{}] and [{}]",
            shape_str(qkv),
            shape_str(state)
        ));
    }
    let (t, c) = (qkv[0], qkv[1]);
    let (nv, dk, dv) = (state[0], state[1], state[2]);
    if nv == 0 || dk == 0 || dv == 0 || c <= nv * dv || (c - nv * dv) % (2 * dk) != 0 {
        return Err(format!(
            "qkv width {c} must be 2 * nk * {dk} + {nv} * {dv} for some nk > 0"
        ));
    }
    let nk = (c - nv * dv) / (2 * dk);
    if nv % nk != 0 {
        return Err(format!("value heads {nv} must be a multiple of key heads {nk}"));
    }
    Ok((t, nk, nv, dk, dv))
}

/// RoPE cos/sin tables [max_pos, rotary_dim/2], computed in f64 and rounded once to f32.
/// inv_freq[i] = theta^(-2i/rotary_dim); angle = pos * inv_freq[i].
pub fn rope_tables(theta: f64, rotary_dim: usize, max_pos: usize) -> (Vec<f32>, Vec<f32>) {
    rope_tables_of(&crate::model::config::rope_inv_freq(theta, rotary_dim, None), max_pos)
}

/// cos/sin tables [max_pos, half] of the given inverse frequencies.
pub fn rope_tables_of(inv_freq: &[f64], max_pos: usize) -> (Vec<f32>, Vec<f32>) {
    let half = inv_freq.len();
    let mut cos = Vec::with_capacity(max_pos * half);
    let mut sin = Vec::with_capacity(max_pos * half);
    for p in 0..max_pos {
        for &inv in inv_freq {
            let a = p as f64 * inv;
            cos.push(a.cos() as f32);
            sin.push(a.sin() as f32);
        }
    }
    (cos, sin)
}
