//! Qwen3.5 (Gated DeltaNet hybrid) text models on any backend: `Qwen3_5ForCausalLM`
//! (`qwen3_5_text`, weights under `model.`) and the text part of the vision-language checkpoint
//! (`qwen3_5`, weights under `model.language_model.`; the vision tower and MTP head are not read).
//! Three of every four layers (config `layer_types`) are linear attention (Gated DeltaNet) with a
//! conv state and a recurrent state; the others are full attention with an output gate and a KV
//! cache. Weights stay in their file dtype on the device; activations, caches and states are f32.
//! The math is tools/oracle/gdn_reference.py's (transformers 5.24, modeling_qwen3_5.py).
use super::config::{Config, HybridConfig, LayerType};
use super::qwen3::{Logits, Source};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{rope_tables, Op, OpDesc, TensorDesc};
use crate::tensor::{shape_str, Tensor};

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
    pub post_norm: Tensor,
    pub gate: Tensor,
    pub up: Tensor,
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
    pub rope_cos: Tensor,
    pub rope_sin: Tensor,
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
    let (d, f, hq, hkv, dh, v) = (
        c.hidden_size,
        c.intermediate_size,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.head_dim,
        c.vocab_size,
    );
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
    /// Uploads every weight to `dev`, checking names, dtypes and shapes against config.json first.
    pub fn load(
        c: &Config,
        src: &Source,
        dev: &dyn Backend,
        max_ctx: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Weights> {
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
        if let Source::File(st) = src {
            for (name, shape) in &want {
                let (info, _) = st.get(name)?;
                if !info.dtype.is_float() {
                    return Err(Error::File {
                        path: st.path_of(name),
                        detail: format!("tensor `{name}`: dtype {} is not a float type", info.dtype),
                    });
                }
                if &info.shape != shape {
                    return Err(Error::File {
                        path: st.path_of(name),
                        detail: format!(
                            "tensor `{name}`: shape [{}] but config.json implies [{}]",
                            shape_str(&info.shape),
                            shape_str(shape)
                        ),
                    });
                }
            }
        }
        let total = want.len();
        let mut done = 0;
        let mut decode_bytes = 0;
        // a vocabulary matrix [V, D], in row shards of `rows`
        let vocab = |name: &str| -> Result<Vec<(usize, Tensor)>> {
            let (v, d) = (c.vocab_size, c.hidden_size);
            let dtype = match src {
                Source::File(st) => st.get(name)?.0.dtype,
                Source::Random { dtype, .. } => *dtype,
                Source::Gguf(_) => unreachable!("refused above"),
            };
            let rows = shard_rows(dev, dtype, v, d);
            let mut parts = Vec::new();
            for first in (0..v).step_by(rows) {
                let n = rows.min(v - first);
                let t = match src {
                    Source::File(st) => {
                        let (_, bytes) = st.get(name)?;
                        let t = dev.alloc(dtype, &[n, d])?;
                        dev.upload(&t, &bytes[first * d * dtype.size()..(first + n) * d * dtype.size()])?;
                        t
                    }
                    Source::Random { dtype, seed } => {
                        random_weight(dev, &format!("{name}[{first}..]"), &[n, d], *dtype, *seed)?
                    }
                    Source::Gguf(_) => unreachable!("refused above"),
                };
                parts.push((first, t));
            }
            Ok(parts)
        };
        let embed = vocab(&format!("{prefix}embed_tokens.weight"))?;
        let lm_head = if c.tie_word_embeddings {
            embed.clone()
        } else {
            vocab("lm_head.weight")?
        };
        decode_bytes += lm_head.iter().map(|p| p.1.nbytes()).sum::<usize>();
        done += if c.tie_word_embeddings { 1 } else { 2 };
        progress(done, total);
        let mut up = |name: &str| -> Result<Tensor> {
            let shape = &want.iter().find(|w| w.0 == name).expect("an expected tensor").1;
            let t = match src {
                Source::File(st) => {
                    let (info, bytes) = st.get(name)?;
                    let t = dev.alloc(info.dtype, shape)?;
                    dev.upload(&t, bytes)?;
                    t
                }
                Source::Random { dtype, seed } => random_weight(dev, name, shape, *dtype, *seed)?,
                Source::Gguf(_) => unreachable!("refused above"),
            };
            decode_bytes += t.nbytes();
            done += 1;
            progress(done, total);
            Ok(t)
        };
        let final_norm = up(&format!("{prefix}norm.weight"))?;
        let mut layers = Vec::new();
        for (i, kind) in h.layer_types.iter().enumerate() {
            let p = format!("{prefix}layers.{i}");
            let mut g = |s: &str| up(&format!("{p}.{s}"));
            let in_norm = g("input_layernorm.weight")?;
            let mixer = match kind {
                LayerType::Linear => Mixer::Linear {
                    qkv: g("linear_attn.in_proj_qkv.weight")?,
                    z: g("linear_attn.in_proj_z.weight")?,
                    b: g("linear_attn.in_proj_b.weight")?,
                    a: g("linear_attn.in_proj_a.weight")?,
                    conv: g("linear_attn.conv1d.weight")?.reshape(&[h.conv_dim(), h.linear_conv_kernel_dim])?,
                    a_log: g("linear_attn.A_log")?,
                    dt_bias: g("linear_attn.dt_bias")?,
                    norm: g("linear_attn.norm.weight")?,
                    out: g("linear_attn.out_proj.weight")?,
                },
                LayerType::Full => Mixer::Full {
                    q: g("self_attn.q_proj.weight")?,
                    k: g("self_attn.k_proj.weight")?,
                    v: g("self_attn.v_proj.weight")?,
                    o: g("self_attn.o_proj.weight")?,
                    q_norm: g("self_attn.q_norm.weight")?,
                    k_norm: g("self_attn.k_norm.weight")?,
                },
            };
            layers.push(Layer {
                in_norm,
                mixer,
                post_norm: g("post_attention_layernorm.weight")?,
                gate: g("mlp.gate_proj.weight")?,
                up: g("mlp.up_proj.weight")?,
                down: g("mlp.down_proj.weight")?,
            });
        }
        let (cos, sin) = rope_tables(c.rope_theta, h.rotary_dim, max_ctx);
        let rope_cos = dev.alloc(DType::F32, &[max_ctx, h.rotary_dim / 2])?;
        dev.upload(&rope_cos, &DType::F32.encode_f32(&cos))?;
        let rope_sin = dev.alloc(DType::F32, &[max_ctx, h.rotary_dim / 2])?;
        dev.upload(&rope_sin, &DType::F32.encode_f32(&sin))?;
        Ok(Weights {
            embed,
            lm_head,
            final_norm,
            layers,
            rope_cos,
            rope_sin,
            decode_bytes,
        })
    }
}

/// Random weights with a trained model's scales (benchmarks): (1 + w) norms ~0, the gated norm ~1,
/// A_log = log U(1, 16), softplus(dt_bias) = U(0.001, 0.1), matrices ~1/sqrt(fan_in).
fn random_weight(dev: &dyn Backend, name: &str, shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut r = crate::util::Rng::new(seed ^ crate::util::seed(name));
    let vals: Vec<f32> = if name.ends_with("A_log") {
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
    };
    let t = dev.alloc(dtype, shape)?;
    dev.upload(&t, &dtype.encode_f32(&vals))?;
    Ok(t)
}

/// One layer's per-sequence state.
pub enum LayerCache {
    /// [capacity, Hkv, Dh] f32 each
    Full { k: Tensor, v: Tensor },
    /// conv [K-1, conv_dim] and recurrent [nv, dk, dv] states, f32, two of each: an op never reads
    /// and writes one buffer, so step i reads `[cur]` and writes `[1 - cur]`
    Linear { conv: [Tensor; 2], rec: [Tensor; 2] },
}

/// The hybrid cache: attention KV for full layers, conv + recurrent state for linear layers.
pub struct Cache {
    pub layers: Vec<LayerCache>,
    /// which of each linear layer's two state buffers is current
    pub cur: usize,
    pub len: usize,
    pub capacity: usize,
}

impl Cache {
    /// A fresh sequence: zero states (device buffers start zeroed), empty KV.
    pub fn new(c: &Config, dev: &dyn Backend, capacity: usize) -> Result<Cache> {
        let h = hybrid(c)?;
        let mut layers = Vec::new();
        for kind in &h.layer_types {
            layers.push(match kind {
                LayerType::Full => {
                    let shape = [capacity, c.num_key_value_heads, c.head_dim];
                    LayerCache::Full {
                        k: dev.alloc(DType::F32, &shape)?,
                        v: dev.alloc(DType::F32, &shape)?,
                    }
                }
                LayerType::Linear => {
                    let cs = [h.linear_conv_kernel_dim - 1, h.conv_dim()];
                    let rs = [h.linear_num_value_heads, h.linear_key_head_dim, h.linear_value_head_dim];
                    let z = |s: &[usize]| -> Result<Tensor> {
                        let t = dev.alloc(DType::F32, s)?;
                        dev.upload(&t, &vec![0u8; t.nbytes()])?;
                        Ok(t)
                    };
                    LayerCache::Linear {
                        conv: [z(&cs)?, z(&cs)?],
                        rec: [z(&rs)?, z(&rs)?],
                    }
                }
            });
        }
        Ok(Cache {
            layers,
            cur: 0,
            len: 0,
            capacity,
        })
    }
}

/// Scratch tensors for a forward over T tokens, allocated once per T and reused.
pub struct Workspace {
    pub t: usize,
    pub ids: Tensor,
    x: [Tensor; 2],
    h: Tensor,
    mix: Tensor,
    // linear attention
    qkv: Tensor,
    conv: Tensor,
    z: Tensor,
    b: Tensor,
    a: Tensor,
    core: Tensor,
    normed: Tensor,
    // full attention
    qg: Tensor,
    k: Tensor,
    v: Tensor,
    att: Tensor,
    // MLP
    gate: Tensor,
    up: Tensor,
    act: Tensor,
    last: Tensor,
    pub logits: Tensor,
    pub next: Tensor,
}

impl Workspace {
    pub fn new(c: &Config, dev: &dyn Backend, t: usize) -> Result<Workspace> {
        let hc = hybrid(c)?;
        let (d, f, hq, hkv, dh) = (
            c.hidden_size,
            c.intermediate_size,
            c.num_attention_heads,
            c.num_key_value_heads,
            c.head_dim,
        );
        let (nv, dv) = (hc.linear_num_value_heads, hc.linear_value_head_dim);
        let a = |s: &[usize]| dev.alloc(DType::F32, s);
        Ok(Workspace {
            t,
            ids: dev.alloc(DType::U32, &[t])?,
            x: [a(&[t, d])?, a(&[t, d])?],
            h: a(&[t, d])?,
            mix: a(&[t, d])?,
            qkv: a(&[t, hc.conv_dim()])?,
            conv: a(&[t, hc.conv_dim()])?,
            z: a(&[t, nv, dv])?,
            b: a(&[t, nv])?,
            a: a(&[t, nv])?,
            core: a(&[t, nv, dv])?,
            normed: a(&[t, nv, dv])?,
            qg: a(&[t, hq, 2 * dh])?,
            k: a(&[t, hkv, dh])?,
            v: a(&[t, hkv, dh])?,
            att: a(&[t, hq, dh])?,
            gate: a(&[t, f])?,
            up: a(&[t, f])?,
            act: a(&[t, f])?,
            last: a(&[1, d])?,
            logits: a(&[t, c.vocab_size])?,
            next: dev.alloc(DType::U32, &[1])?,
        })
    }
}

/// Records one forward over `ws.t` tokens at positions cache.len.., reading the token ids from
/// `ids`. Appends to the KV caches, advances the conv and recurrent states. Calls `hidden(i, dev,
/// x)` after the embedding (i = 0) and after each decoder layer (i = layer + 1).
#[allow(clippy::too_many_arguments)]
pub fn forward(
    c: &Config,
    w: &Weights,
    dev: &dyn Backend,
    ws: &Workspace,
    ids: &Tensor,
    cache: &mut Cache,
    which: Logits,
    hidden: &mut dyn FnMut(usize, &dyn Backend, &Tensor) -> Result<()>,
) -> Result<()> {
    let hc = hybrid(c)?;
    let (t, d, hq, hkv, dh) = (
        ws.t,
        c.hidden_size,
        c.num_attention_heads,
        c.num_key_value_heads,
        c.head_dim,
    );
    let (nv, dv) = (hc.linear_num_value_heads, hc.linear_value_head_dim);
    let n_past = cache.len;
    if n_past + t > cache.capacity {
        return Err(Error::Other(format!(
            "context full: {n_past} + {t} tokens exceed the context of {}",
            cache.capacity
        )));
    }
    // every norm of the decoder is x̂ (1 + w); the linear attention's output norm is gated
    let norm = Op::RmsNorm {
        eps: c.rms_norm_eps,
        unit_offset: true,
    };
    let (cur, next) = (cache.cur, 1 - cache.cur);
    // 1. x = embed[ids]                                                       [T, D]
    match w.embed.as_slice() {
        [(0, table)] => dev.run(&Op::Embedding, &[table, ids], &[&ws.x[0]])?,
        shards => {
            for (first, table) in shards {
                dev.run(&Op::EmbeddingShard { first: *first }, &[table, ids], &[&ws.x[0]])?;
            }
        }
    }
    hidden(0, dev, &ws.x[0])?;
    let (x, x2) = (&ws.x[0], &ws.x[1]);
    for (li, (l, lc)) in w.layers.iter().zip(&cache.layers).enumerate() {
        // 2. h = rmsnorm(x)
        dev.run(&norm, &[x, &l.in_norm], &[&ws.h])?;
        match (&l.mixer, lc) {
            (
                Mixer::Linear {
                    qkv,
                    z,
                    b,
                    a,
                    conv,
                    a_log,
                    dt_bias,
                    norm: gnorm,
                    out,
                },
                LayerCache::Linear { conv: cs, rec },
            ) => {
                // 3. qkv, z, b, a = h Wᵀ                                          [T, conv_dim], [T, nv*dv], [T, nv]
                dev.run(&Op::Linear, &[&ws.h, qkv], &[&ws.qkv])?;
                dev.run(&Op::Linear, &[&ws.h, z], &[&ws.z.reshape(&[t, nv * dv])?])?;
                dev.run(&Op::Linear, &[&ws.h, b], &[&ws.b])?;
                dev.run(&Op::Linear, &[&ws.h, a], &[&ws.a])?;
                // 4. causal conv1d + SiLU over [conv state | qkv]; the state moves to the other buffer
                let conv_op = if t == 1 {
                    Op::CausalConv1dUpdate
                } else {
                    Op::CausalConv1d
                };
                dev.run(&conv_op, &[&ws.qkv, conv, &cs[cur]], &[&ws.conv, &cs[next]])?;
                // 5. gated delta rule: recurrent step (decode) or chunked (prefill)   [T, nv, dv]
                let rule = if t == 1 { Op::GdnRecurrent } else { Op::GdnChunked };
                dev.run(
                    &rule,
                    &[&ws.conv, &ws.b, &ws.a, a_log, dt_bias, &rec[cur]],
                    &[&ws.core, &rec[next]],
                )?;
                // 6. gated RMSNorm per value head, then out_proj                    [T, D]
                dev.run(
                    &Op::RmsNormGated { eps: c.rms_norm_eps },
                    &[&ws.core, &ws.z, gnorm],
                    &[&ws.normed],
                )?;
                dev.run(&Op::Linear, &[&ws.normed.reshape(&[t, nv * dv])?, out], &[&ws.mix])?;
            }
            (
                Mixer::Full {
                    q,
                    k,
                    v,
                    o,
                    q_norm,
                    k_norm,
                },
                LayerCache::Full { k: kc, v: vc },
            ) => {
                // 3. qg (query | gate per head), k, v = h Wᵀ                      [T, Hq, 2Dh], [T, Hkv, Dh]
                dev.run(&Op::Linear, &[&ws.h, q], &[&ws.qg.reshape(&[t, hq * 2 * dh])?])?;
                dev.run(&Op::Linear, &[&ws.h, k], &[&ws.k.reshape(&[t, hkv * dh])?])?;
                dev.run(&Op::Linear, &[&ws.h, v], &[&ws.v.reshape(&[t, hkv * dh])?])?;
                // 4. q/k norm, partial RoPE, k/v into the cache, attention, * sigmoid(gate): one op
                let op = Op::GatedAttention {
                    n_past,
                    scale: 1.0 / (dh as f32).sqrt(),
                    eps: c.rms_norm_eps,
                    rotary_dim: hc.rotary_dim,
                };
                dev.run(
                    &op,
                    &[&ws.qg, &ws.k, &ws.v, q_norm, k_norm, &w.rope_cos, &w.rope_sin],
                    &[&ws.att, kc, vc],
                )?;
                // 5. o_proj                                                         [T, D]
                dev.run(&Op::Linear, &[&ws.att.reshape(&[t, hq * dh])?, o], &[&ws.mix])?;
            }
            _ => {
                return Err(Error::Other(format!(
                    "layer {li}: the cache does not match the layer type"
                )))
            }
        }
        // 7. x2 = x + mixer; x = x2 + down(silu(gate(h)) * up(h)), h = rmsnorm(x2)
        dev.run(&Op::Add, &[x, &ws.mix], &[x2])?;
        dev.run(&norm, &[x2, &l.post_norm], &[&ws.h])?;
        dev.run(&Op::Linear, &[&ws.h, &l.gate], &[&ws.gate])?;
        dev.run(&Op::Linear, &[&ws.h, &l.up], &[&ws.up])?;
        dev.run(&Op::SwiGlu, &[&ws.gate, &ws.up], &[&ws.act])?;
        dev.run(&Op::Linear, &[&ws.act, &l.down], &[&ws.mix])?;
        dev.run(&Op::Add, &[x2, &ws.mix], &[x])?;
        hidden(li + 1, dev, x)?;
    }
    cache.cur = next;
    cache.len += t;
    // 8. final norm and the LM head (tied: the embedding matrix)
    match which {
        Logits::Last => {
            dev.run(&norm, &[&x.view((t - 1) * d, &[1, d])?, &w.final_norm], &[&ws.last])?;
            lm_head(w, dev, &ws.last, &ws.logits.view(0, &[1, c.vocab_size])?)
        }
        Logits::All => {
            dev.run(&norm, &[x, &w.final_norm], &[&ws.h])?;
            lm_head(w, dev, &ws.h, &ws.logits)
        }
    }
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
