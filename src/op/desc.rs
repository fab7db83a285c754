//! What a backend is asked about: `OpDesc` (the op and every operand's dtype and shape) and
//! `OpDesc::check`, the single statement of each op's contract.
use super::Op;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::{numel, shape_str, Tensor};
use serde::{Deserialize, Serialize};

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
            Op::RmsNormRopeKv { .. } => (6, 3),
            Op::RmsNormRopeKvAttention { .. } => (8, 3),
            Op::LinearRmsNormRopeKv { .. } => (7, 3),
            Op::SwiGluLinear | Op::LinearSwiGlu => (2, 1),
            Op::AddRmsNorm { .. } => (3, 2),
            Op::AddRmsNormLinear { .. } => (4, 2),
            Op::LinearAddRmsNorm { .. } => (4, 3),
            Op::LinearAdd | Op::RmsNormLinear { .. } => (3, 1),
            Op::Attention { .. } => (3, 1),
            Op::Softmax | Op::Argmax | Op::Copy | Op::Cast => (1, 1),
            Op::TopK { .. } => (1, 2),
            Op::CausalConv1d | Op::CausalConv1dUpdate => (3, 2),
            Op::GdnRecurrent | Op::GdnChunked => (6, 2),
            Op::RmsNormGated { .. } => (3, 1),
            Op::GatedAttention { .. } => (7, 3),
            Op::KvWrite => (3, 2),
            Op::PagedAttention { .. } => (5, 1),
            Op::PagedGatedAttention { .. } => (9, 3),
            Op::Penalties => (3, 1),
            Op::MinP => (2, 1),
            Op::CausalConv1dBatch => (3, 2),
            Op::GdnBatch => (6, 2),
            Op::GdnConvNorm { .. } => (9, 3),
            Op::Sample { .. } => (2, 2),
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
            Op::SwiGluLinear => {
                // the composition: swiglu over the pairs (into f32), then linear
                let (m, k2) = (
                    i[0].shape.first().copied().unwrap_or(0),
                    i[0].shape.get(1).copied().unwrap_or(0),
                );
                if i[0].shape.len() != 2 || k2 % 2 != 0 {
                    return bad(format!(
                        "x must be [M, 2K] (gate, up) pairs, got [{}]",
                        shape_str(&i[0].shape)
                    ));
                }
                let act = TensorDesc::new(DType::F32, &[m, k2 / 2]);
                OpDesc::new(Op::SwiGlu, vec![i[0].clone()], vec![act.clone()]).check()?;
                OpDesc::new(Op::Linear, vec![act, i[1].clone()], o.clone()).check()?;
            }
            Op::LinearSwiGlu => {
                // the composition: linear into f32 (gate, up) pairs, then swiglu over them
                let (m, n2) = (
                    i[0].shape.first().copied().unwrap_or(0),
                    i[1].shape.first().copied().unwrap_or(0),
                );
                if i[1].shape.len() != 2 || n2 % 2 != 0 {
                    return bad(format!(
                        "w must be [2F, K] (gate, up) rows, got [{}]",
                        shape_str(&i[1].shape)
                    ));
                }
                let pairs = TensorDesc::new(DType::F32, &[m, n2]);
                OpDesc::new(Op::Linear, i.clone(), vec![pairs.clone()]).check()?;
                OpDesc::new(Op::SwiGlu, vec![pairs], o.clone()).check()?;
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
                // w: one [Dh] for every head, or [H, Dh], a row a head (q and k heads stacked)
                let mut w = i[1].clone();
                if w.shape.len() == 2 {
                    if i[0].shape.len() != 3 || w.shape[0] != i[0].shape[1] {
                        return Err(Error::shape(
                            name,
                            format!(
                                "a per-head w must be [H, Dh] of x [T, H, Dh], got w [{}], x [{}]",
                                shape_str(&w.shape),
                                shape_str(&i[0].shape)
                            ),
                        ));
                    }
                    w.shape.remove(0);
                }
                let norm = OpDesc::new(
                    Op::RmsNorm {
                        eps: *eps,
                        unit_offset: false,
                    },
                    vec![i[0].clone(), w],
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
            Op::KvWrite | Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } => {
                super::paged::check_shapes(&self.op, i, o)?;
            }
            Op::Sample { k } => super::sample::check_shapes(*k, i, o)?,
            Op::AddRmsNormLinear { .. }
            | Op::LinearAddRmsNorm { .. }
            | Op::LinearAdd
            | Op::RmsNormLinear { .. }
            | Op::RmsNormRopeKv { .. }
            | Op::LinearRmsNormRopeKv { .. }
            | Op::RmsNormRopeKvAttention { .. }
            | Op::GdnConvNorm { .. } => super::fused::check_shapes(&self.op, i, o)?,
            Op::Penalties | Op::MinP => {
                // the logits rows, and per row its parameters: 4 for the penalties, 1 for min-p
                let (what, cols) = if self.op == Op::Penalties {
                    ("params", 4)
                } else {
                    ("margin", 1)
                };
                dtype_is(&i[0], DType::F32, "logits")?;
                dtype_is(&o[0], DType::F32, "out")?;
                if i[0].shape.len() != 2 || i[0].shape[1] == 0 {
                    return bad(format!(
                        "logits must be [R, V] with V >= 1, got [{}]",
                        shape_str(&i[0].shape)
                    ));
                }
                let r = i[0].shape[0];
                let p = i.last().unwrap();
                dtype_is(p, DType::F32, what)?;
                if p.shape != [r, cols] {
                    return bad(format!("{what} must be [{r}, {cols}], got [{}]", shape_str(&p.shape)));
                }
                if self.op == Op::Penalties {
                    dtype_is(&i[1], DType::U32, "counts")?;
                    same_shape(&i[0], &i[1], "logits vs counts")?;
                }
                same_shape(&i[0], &o[0], "logits vs out")?;
            }
            Op::CausalConv1dBatch | Op::GdnBatch => super::hybrid::check_shapes(&self.op, i, o)?,
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
