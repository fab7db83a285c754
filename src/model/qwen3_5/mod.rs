//! Qwen3.5 (Gated DeltaNet hybrid) text models on any backend: `Qwen3_5ForCausalLM`
//! (`qwen3_5_text`, weights under `model.`) and the text part of the vision-language checkpoint
//! (`qwen3_5`, weights under `model.language_model.`; the vision tower and MTP head are not read).
//! Three of every four layers (config `layer_types`) are linear attention (Gated DeltaNet) with a
//! conv state and a recurrent state; the others are full attention with an output gate and a KV
//! cache. Weights stay in their file dtype on the device; activations, caches and states are f32.
//! The math is tools/oracle/gdn_reference.py's (transformers 5.24, modeling_qwen3_5.py).
pub mod paged;

pub use paged::{forward_paged, full_layer_pool, kv_pools, HybridState, HybridWorkspace};

use super::config::{Config, Dims, HybridConfig, LayerType};
use super::load::{check_tensors, gate_up, stacked, Load, Loader};
use super::{Rope, Source};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{rope_inv_freq, Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;
use crate::util::Rng;

#[allow(clippy::large_enum_variant)]
pub enum Mixer {
    /// Gated DeltaNet. `conv` is conv1d.weight [conv_dim, 1, K] viewed as [conv_dim, K].
    Linear {
        qkv: Tensor,
        z: Tensor,
        b: Tensor,
        a: Tensor,
        conv: Tensor,
        a_log: Tensor,
        dt_bias: Tensor,
        norm: Tensor,
        out: Tensor,
    },
    /// Output-gated softmax attention; q_proj rows alternate [query | gate] per head.
    Full {
        q: Tensor,
        k: Tensor,
        v: Tensor,
        o: Tensor,
        q_norm: Tensor,
        k_norm: Tensor,
    },
}

pub struct Layer {
    pub in_norm: Tensor,
    pub mixer: Mixer,
    /// The mixer's input projections stacked (linear attention: in_proj qkv, z, b, a; full: q, k,
    /// v) when their dtypes agree, the mixer's tensors then row views of it: a one-token step
    /// projects them in one linear (`stacked_one`).
    pub stacked: Option<Tensor>,
    pub post_norm: Tensor,
    /// gate_proj and up_proj rows interleaved ([2F, D]), one linear for both, swiglu over pairs
    pub gate_up: Tensor,
    pub down: Tensor,
}

pub struct Weights {
    /// The embedding table in row shards (first vocabulary row, rows): one shard unless the
    /// table exceeds what one binding of the device holds (a 248k x 1024 bf16 table is 508 MB,
    /// lavapipe binds 128 MiB)
    pub embed: Vec<(usize, Tensor)>,
    /// The LM head in the same row shards (the embedding's, when tied)
    pub lm_head: Vec<(usize, Tensor)>,
    pub final_norm: Tensor,
    pub layers: Vec<Layer>,
    /// RoPE tables [max_ctx, rotary_dim / 2]: only the first rotary_dim dims of a head rotate
    pub rope: Rope,
    /// Bytes of weights a decode step reads (every matrix once, the embedding row aside).
    pub decode_bytes: usize,
}

fn hybrid(c: &Config) -> Result<&HybridConfig> {
    c.hybrid
        .as_ref()
        .ok_or_else(|| Error::Other(format!("model_type {}: no Qwen3.5 fields in the config", c.model_type)))
}

/// The tensors (name, expected shape) of a Qwen3.5 text model under `prefix` (`model.` or
/// `model.language_model.`), from config.json.
pub fn expected_tensors(c: &Config, prefix: &str) -> Result<Vec<(String, Vec<usize>)>> {
    let h = hybrid(c)?;
    let Dims { d, f, hq, hkv, dh, v } = c.dims();
    let (nv, cd, vd, k) = (
        h.linear_num_value_heads,
        h.conv_dim(),
        h.value_dim(),
        h.linear_conv_kernel_dim,
    );
    let mut t = vec![
        (format!("{prefix}embed_tokens.weight"), vec![v, d]),
        (format!("{prefix}norm.weight"), vec![d]),
    ];
    if !c.tie_word_embeddings {
        t.push(("lm_head.weight".into(), vec![v, d]));
    }
    for (i, kind) in h.layer_types.iter().enumerate() {
        let p = format!("{prefix}layers.{i}");
        t.push((format!("{p}.input_layernorm.weight"), vec![d]));
        match kind {
            LayerType::Linear => t.extend([
                (format!("{p}.linear_attn.in_proj_qkv.weight"), vec![cd, d]),
                (format!("{p}.linear_attn.in_proj_z.weight"), vec![vd, d]),
                (format!("{p}.linear_attn.in_proj_b.weight"), vec![nv, d]),
                (format!("{p}.linear_attn.in_proj_a.weight"), vec![nv, d]),
                (format!("{p}.linear_attn.conv1d.weight"), vec![cd, 1, k]),
                (format!("{p}.linear_attn.A_log"), vec![nv]),
                (format!("{p}.linear_attn.dt_bias"), vec![nv]),
                (format!("{p}.linear_attn.norm.weight"), vec![h.linear_value_head_dim]),
                (format!("{p}.linear_attn.out_proj.weight"), vec![d, vd]),
            ]),
            LayerType::Full => t.extend([
                (format!("{p}.self_attn.q_proj.weight"), vec![hq * 2 * dh, d]),
                (format!("{p}.self_attn.k_proj.weight"), vec![hkv * dh, d]),
                (format!("{p}.self_attn.v_proj.weight"), vec![hkv * dh, d]),
                (format!("{p}.self_attn.o_proj.weight"), vec![d, hq * dh]),
                (format!("{p}.self_attn.q_norm.weight"), vec![dh]),
                (format!("{p}.self_attn.k_norm.weight"), vec![dh]),
            ]),
        }
        t.extend([
            (format!("{p}.post_attention_layernorm.weight"), vec![d]),
            (format!("{p}.mlp.gate_proj.weight"), vec![f, d]),
            (format!("{p}.mlp.up_proj.weight"), vec![f, d]),
            (format!("{p}.mlp.down_proj.weight"), vec![d, f]),
        ]);
    }
    Ok(t)
}

/// Rows per shard of a [v, d] vocabulary matrix: all of them if the device takes the whole
/// matrix in one embedding lookup and one LM-head matvec, else halved until it does.
fn shard_rows(dev: &dyn Backend, dtype: DType, v: usize, d: usize) -> usize {
    let mut rows = v;
    loop {
        let table = TensorDesc::new(dtype, &[rows, d]);
        let emb = OpDesc::new(
            Op::EmbeddingShard { first: 0 },
            vec![table.clone(), TensorDesc::new(DType::U32, &[1])],
            vec![TensorDesc::new(DType::F32, &[1, d])],
        );
        let head = OpDesc::new(
            Op::Linear,
            vec![TensorDesc::new(DType::F32, &[1, d]), table],
            vec![TensorDesc::new(DType::F32, &[1, rows])],
        );
        if rows == 1 || (dev.supports(&emb).is_yes() && dev.supports(&head).is_yes()) {
            return rows;
        }
        rows = rows.div_ceil(2);
    }
}

/// `model.language_model.` when the checkpoint is the vision-language layout, else `model.`.
fn prefix_of(src: &Source) -> &'static str {
    match src {
        Source::File(st) if st.tensors.contains_key("model.language_model.embed_tokens.weight") => {
            "model.language_model."
        }
        _ => "model.",
    }
}

impl Weights {
    /// Uploads every weight, checking names, dtypes and shapes against config.json first.
    pub(super) fn load(req: Load) -> Result<Weights> {
        let (c, src) = (req.c, req.src);
        let h = hybrid(c)?;
        if let Source::Gguf(g) = src {
            return Err(Error::File {
                path: g.path.display().to_string(),
                detail: "Qwen3.5 from a GGUF file is not supported yet (use the safetensors checkpoint)".into(),
            });
        }
        if let Source::Random { dtype, .. } = src {
            if dtype.is_quant() {
                return Err(Error::Other(format!(
                    "Qwen3.5 with {dtype} weights is not supported yet"
                )));
            }
        }
        let prefix = prefix_of(src);
        let want = expected_tensors(c, prefix)?;
        check_tensors(c, src, &want, false)?;
        let total = want.len();
        let mut ld = Loader::new(req, random_values, total);
        let embed = vocab(&ld, &format!("{prefix}embed_tokens.weight"))?;
        let lm_head = if c.tie_word_embeddings {
            embed.clone()
        } else {
            vocab(&ld, "lm_head.weight")?
        };
        let mut decode_bytes = lm_head.iter().map(|p| p.1.nbytes()).sum::<usize>();
        ld.count(if c.tie_word_embeddings { 1 } else { 2 });
        let mut up = |ld: &mut Loader, name: &str| -> Result<Tensor> {
            let shape = &want.iter().find(|w| w.0 == name).expect("an expected tensor").1;
            let t = ld.tensor(name, shape)?;
            decode_bytes += t.nbytes();
            Ok(t)
        };
        let mut fused_bytes = 0;
        let final_norm = up(&mut ld, &format!("{prefix}norm.weight"))?;
        let mut layers = Vec::new();
        for (i, kind) in h.layer_types.iter().enumerate() {
            let p = format!("{prefix}layers.{i}");
            let gu = gate_up(
                &ld,
                &format!("{p}.mlp.gate_proj.weight"),
                &format!("{p}.mlp.up_proj.weight"),
            )?;
            ld.count(2);
            fused_bytes += gu.nbytes();
            let (dims, nv) = (c.dims(), h.linear_num_value_heads);
            let parts: Vec<(&str, usize)> = match kind {
                LayerType::Linear => vec![
                    ("linear_attn.in_proj_qkv.weight", h.conv_dim()),
                    ("linear_attn.in_proj_z.weight", nv * h.linear_value_head_dim),
                    ("linear_attn.in_proj_b.weight", nv),
                    ("linear_attn.in_proj_a.weight", nv),
                ],
                LayerType::Full => vec![
                    ("self_attn.q_proj.weight", dims.hq * 2 * dims.dh),
                    ("self_attn.k_proj.weight", dims.hkv * dims.dh),
                    ("self_attn.v_proj.weight", dims.hkv * dims.dh),
                ],
            };
            let full: Vec<(String, usize)> = parts.iter().map(|(n, r)| (format!("{p}.{n}"), *r)).collect();
            let st = stacked(&ld, &full, dims.d)?;
            if let Some((t, _)) = &st {
                ld.count(parts.len());
                fused_bytes += t.nbytes();
            }
            let (stacked, views) = match st {
                Some((t, v)) => (Some(t), v),
                None => (None, Vec::new()),
            };
            let mut g = |s: &str| up(&mut ld, &format!("{p}.{s}"));
            let in_norm = g("input_layernorm.weight")?;
            // the projections: the stacked tensor's views, else each loaded on its own
            let mut pv = views;
            if stacked.is_none() {
                for (n, _) in &parts {
                    pv.push(g(n)?);
                }
            }
            let mixer = match kind {
                LayerType::Linear => Mixer::Linear {
                    qkv: pv[0].clone(),
                    z: pv[1].clone(),
                    b: pv[2].clone(),
                    a: pv[3].clone(),
                    conv: g("linear_attn.conv1d.weight")?.reshape(&[h.conv_dim(), h.linear_conv_kernel_dim])?,
                    a_log: g("linear_attn.A_log")?,
                    dt_bias: g("linear_attn.dt_bias")?,
                    norm: g("linear_attn.norm.weight")?,
                    out: g("linear_attn.out_proj.weight")?,
                },
                LayerType::Full => Mixer::Full {
                    q: pv[0].clone(),
                    k: pv[1].clone(),
                    v: pv[2].clone(),
                    o: g("self_attn.o_proj.weight")?,
                    q_norm: g("self_attn.q_norm.weight")?,
                    k_norm: g("self_attn.k_norm.weight")?,
                },
            };
            layers.push(Layer {
                in_norm,
                mixer,
                stacked,
                post_norm: g("post_attention_layernorm.weight")?,
                gate_up: gu,
                down: g("mlp.down_proj.weight")?,
            });
        }
        let decode_bytes = decode_bytes + fused_bytes;
        Ok(Weights {
            embed,
            lm_head,
            final_norm,
            layers,
            rope: ld.rope(&rope_inv_freq(c.rope_theta, h.rotary_dim, None))?,
            decode_bytes,
        })
    }
}

/// A vocabulary matrix [V, D] on the device in row shards (`shard_rows`), not counted.
fn vocab(ld: &Loader, name: &str) -> Result<Vec<(usize, Tensor)>> {
    let (c, dev) = (ld.c, ld.dev);
    let (v, d) = (c.vocab_size, c.hidden_size);
    let dtype = match ld.src {
        Source::File(st) => st.get(name)?.0.dtype,
        Source::Random { dtype, .. } => *dtype,
        Source::Gguf(_) => unreachable!("refused in Weights::load"),
    };
    let rows = shard_rows(dev, dtype, v, d);
    let mut parts = Vec::new();
    for first in (0..v).step_by(rows) {
        let n = rows.min(v - first);
        let t = match ld.src {
            Source::File(st) => {
                let (_, bytes) = st.get(name)?;
                let t = dev.alloc(dtype, &[n, d])?;
                dev.upload(&t, &bytes[first * d * dtype.size()..(first + n) * d * dtype.size()])?;
                t
            }
            Source::Random { dtype, seed, .. } => ld.random(&format!("{name}[{first}..]"), &[n, d], *dtype, *seed)?,
            Source::Gguf(_) => unreachable!("refused in Weights::load"),
        };
        parts.push((first, t));
    }
    Ok(parts)
}

/// Random weights with a trained model's scales (benchmarks): (1 + w) norms ~0, the gated norm ~1,
/// A_log = log U(1, 16), softplus(dt_bias) = U(0.001, 0.1), matrices ~1/sqrt(fan_in).
fn random_values(name: &str, shape: &[usize], r: &mut Rng) -> Vec<f32> {
    let n: usize = shape.iter().product();
    if name.ends_with("A_log") {
        (0..n).map(|_| (1.0 + 15.0 * r.uniform()).ln() as f32).collect()
    } else if name.ends_with("dt_bias") {
        (0..n)
            .map(|_| (0.001 + 0.099 * r.uniform()).exp_m1().ln() as f32)
            .collect()
    } else if name.ends_with("linear_attn.norm.weight") {
        (0..n).map(|_| 1.0 + 0.05 * r.normal() as f32).collect()
    } else if shape.len() == 1 {
        (0..n).map(|_| 0.05 * r.normal() as f32).collect()
    } else if name.contains("embed") {
        (0..n).map(|_| 0.1 * r.normal() as f32).collect()
    } else {
        let fan_in = *shape.last().unwrap() as f64;
        let s = 1.732 / fan_in.sqrt();
        (0..n).map(|_| ((r.uniform() * 2.0 - 1.0) * s) as f32).collect()
    }
}

/// Rows of the largest stacked mixer projection: linear attention's in_proj (conv dims, z, b, a)
/// or full attention's q (with its gate), k and v.
pub(super) fn stacked_rows(c: &Config) -> Result<usize> {
    let hc = hybrid(c)?;
    let Dims { hq, hkv, dh, .. } = c.dims();
    let nv = hc.linear_num_value_heads;
    let linear = hc.conv_dim() + nv * hc.linear_value_head_dim + 2 * nv;
    Ok(linear.max(hq * 2 * dh + 2 * hkv * dh))
}

/// A one-token step's mixer inputs through the layer's stacked projection: one linear into
/// `out` (scratch of at least the stacked rows), then its parts as views of the given shapes, in
/// order (the norm read inside the linear where `h` is a pending add + norm the device fuses with
/// it). None (nothing recorded) for more tokens or a layer loaded unstacked.
pub(super) fn stacked_one(
    l: &Layer,
    h: &crate::model::normed::Normed,
    out: &Tensor,
    t: usize,
    shapes: &[&[usize]],
    dev: &dyn Backend,
) -> Result<Option<Vec<Tensor>>> {
    let Some(w) = l.stacked.as_ref().filter(|_| t == 1) else {
        return Ok(None);
    };
    h.linear(dev, w, &out.view(0, &[1, w.shape[0]])?)?;
    let mut first = 0;
    let mut parts = Vec::new();
    for s in shapes {
        parts.push(out.view(first, s)?);
        first += s.iter().product::<usize>();
    }
    Ok(Some(parts))
}

/// logits [R, V] = h [R, D] LM-headᵀ; with a sharded head, each (row, shard) is a matvec into the
/// shard's columns of that row.
fn lm_head(w: &Weights, dev: &dyn Backend, h: &Tensor, logits: &Tensor) -> Result<()> {
    if let [(0, head)] = w.lm_head.as_slice() {
        return dev.run(&Op::Linear, &[h, head], &[logits]);
    }
    let (rows, d, v) = (h.shape[0], h.shape[1], logits.shape[1]);
    for r in 0..rows {
        for (first, head) in &w.lm_head {
            dev.run(
                &Op::Linear,
                &[&h.view(r * d, &[1, d])?, head],
                &[&logits.view(r * v + first, &[1, head.shape[0]])?],
            )?;
        }
    }
    Ok(())
}
