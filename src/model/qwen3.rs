//! Qwen3 dense and Llama on any backend (Llama is Qwen3 without the q/k norms). Weights stay in
//! their file dtype on the device (bf16 stays bf16, a GGUF's quant blocks stay quantized);
//! activations and the KV cache are f32.
use super::config::{Config, Dims};
use super::load::{check_tensors, gate_up, stacked, Load, Loader};
use super::lone::Hidden;
use super::paged::{Batch, BatchWorkspace, KvPools};
use super::{mlp, AddNorm, Rope, Source};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::Result;
use crate::model::normed::{Fusions, Normed};
use crate::op::{rope_inv_freq, Op, OpDesc};
use crate::tensor::Tensor;
use crate::util::Rng;

pub struct Layer {
    pub in_norm: Tensor,
    /// q_proj, k_proj and v_proj stacked ([(Hq + 2 Hkv) Dh, D]) when the three share a dtype (a
    /// GGUF may keep v in another quantization): a one-token step projects q, k and v in one linear.
    /// q, k and v are then row views of it.
    pub qkv: Option<Tensor>,
    /// q_proj and k_proj stacked ([(Hq + Hkv) Dh, D]) where v_proj alone has another dtype (a
    /// llama.cpp q4_k_m file keeps attn_v in q6_k in some layers): a one-token step projects q
    /// and k in one linear and v beside them into the same row. q and k are then row views of it.
    pub qk: Option<Tensor>,
    pub q: Tensor,
    pub k: Tensor,
    pub v: Tensor,
    pub o: Tensor,
    /// per-head q/k RMSNorm (Qwen3); None for Llama
    pub q_norm: Option<Tensor>,
    pub k_norm: Option<Tensor>,
    /// with `qkv`: q_norm's row for each of the Hq heads, then k_norm's for the Hkv ([Hq + Hkv,
    /// Dh]), so one call norms the q and k heads of a one-token step together
    pub qk_norm: Option<Tensor>,
    pub post_norm: Tensor,
    /// gate_proj and up_proj rows interleaved ([2F, D]: row 2j = gate_j, row 2j+1 = up_j), so one
    /// linear computes both and swiglu reads them as pairs.
    pub gate_up: Tensor,
    pub down: Tensor,
}

pub struct Weights {
    pub embed: Tensor,
    pub lm_head: Tensor,
    pub final_norm: Tensor,
    pub layers: Vec<Layer>,
    pub rope: Rope,
    /// Bytes of weights a decode step reads (every matrix once, the embedding row aside).
    pub decode_bytes: usize,
}

/// The tensors (name, expected shape) of a Qwen3 checkpoint, from config.json.
pub fn expected_tensors(c: &Config) -> Vec<(String, Vec<usize>)> {
    let Dims { d, f, hq, hkv, dh, v } = c.dims();
    let mut t = vec![
        ("model.embed_tokens.weight".to_string(), vec![v, d]),
        ("model.norm.weight".into(), vec![d]),
    ];
    if !c.tie_word_embeddings {
        t.push(("lm_head.weight".into(), vec![v, d]));
    }
    for i in 0..c.num_hidden_layers {
        let p = format!("model.layers.{i}");
        t.extend([
            (format!("{p}.input_layernorm.weight"), vec![d]),
            (format!("{p}.self_attn.q_proj.weight"), vec![hq * dh, d]),
            (format!("{p}.self_attn.k_proj.weight"), vec![hkv * dh, d]),
            (format!("{p}.self_attn.v_proj.weight"), vec![hkv * dh, d]),
            (format!("{p}.self_attn.o_proj.weight"), vec![d, hq * dh]),
            (format!("{p}.post_attention_layernorm.weight"), vec![d]),
            (format!("{p}.mlp.gate_proj.weight"), vec![f, d]),
            (format!("{p}.mlp.up_proj.weight"), vec![f, d]),
            (format!("{p}.mlp.down_proj.weight"), vec![d, f]),
        ]);
        if c.qk_norm {
            t.extend([
                (format!("{p}.self_attn.q_norm.weight"), vec![dh]),
                (format!("{p}.self_attn.k_norm.weight"), vec![dh]),
            ]);
        }
    }
    t
}

impl Weights {
    /// Uploads every weight, checking names, dtypes and shapes against config.json (or the GGUF
    /// metadata) first.
    pub(super) fn load(req: Load) -> Result<Weights> {
        let (c, src) = (req.c, req.src);
        if !matches!(src, Source::Random { .. }) {
            // the last layer first: a corrupt num_hidden_layers (say 10^12) is refused by name
            // before the per-layer list below is built
            src.info(
                c,
                &format!("model.layers.{}.input_layernorm.weight", c.num_hidden_layers - 1),
            )?;
        }
        let want = expected_tensors(c);
        check_tensors(c, src, &want, true)?;
        // progress counts the tensors uploaded as they are; gate/up go up fused, uncounted
        let total = want.len() - 2 * c.num_hidden_layers;
        let mut ld = Loader::new(req, random_values, total);
        let shape_of = |n: &str| want.iter().find(|w| w.0 == n).map(|w| w.1.clone()).unwrap();
        let up = |ld: &mut Loader, n: &str| ld.tensor(n, &shape_of(n));
        let embed = up(&mut ld, "model.embed_tokens.weight")?;
        let final_norm = up(&mut ld, "model.norm.weight")?;
        let lm_head = if c.tie_word_embeddings {
            embed.clone()
        } else {
            up(&mut ld, "lm_head.weight")?
        };
        let mut layers = Vec::new();
        for i in 0..c.num_hidden_layers {
            let p = format!("model.layers.{i}");
            let gate_up = gate_up(
                &ld,
                &format!("{p}.mlp.gate_proj.weight"),
                &format!("{p}.mlp.up_proj.weight"),
            )?;
            let (qkv, qk, q, k, v) = projections(&mut ld, &p)?;
            let qk_norm = match (qkv.is_some() || qk.is_some(), c.qk_norm) {
                (true, true) => Some(qk_norm(&ld, &p)?),
                _ => None,
            };
            let mut g = |s: &str| up(&mut ld, &format!("{p}.{s}"));
            layers.push(Layer {
                in_norm: g("input_layernorm.weight")?,
                qkv,
                qk,
                q,
                k,
                v,
                o: g("self_attn.o_proj.weight")?,
                q_norm: if c.qk_norm {
                    Some(g("self_attn.q_norm.weight")?)
                } else {
                    None
                },
                k_norm: if c.qk_norm {
                    Some(g("self_attn.k_norm.weight")?)
                } else {
                    None
                },
                qk_norm,
                post_norm: g("post_attention_layernorm.weight")?,
                gate_up,
                down: g("mlp.down_proj.weight")?,
            });
        }
        let mut inv = rope_inv_freq(c.rope_theta, c.head_dim, c.rope_scaling.as_ref());
        if let Source::Gguf(g) = src {
            if let Some(f) = super::gguf_config::rope_freq_factors(g, c.head_dim)? {
                inv.iter_mut().zip(&f).for_each(|(i, f)| *i /= f);
            }
        }
        let rope = ld.rope(&inv)?;
        let mut decode_bytes = lm_head.nbytes() + final_norm.nbytes();
        for l in &layers {
            for t in [&l.in_norm, &l.q, &l.k, &l.v, &l.o, &l.post_norm, &l.gate_up, &l.down] {
                decode_bytes += t.nbytes();
            }
            decode_bytes += l.q_norm.iter().chain(&l.k_norm).map(|t| t.nbytes()).sum::<usize>();
        }
        Ok(Weights {
            embed,
            lm_head,
            final_norm,
            layers,
            rope,
            decode_bytes,
        })
    }
}

/// Layer `p`'s q, k and v projections as (qkv, qk, q, k, v): stacked into `qkv` where their
/// dtypes allow (`load::stacked`; q, k, v its row views), else q and k stacked into `qk` where v
/// alone differs (a q4_k_m file's q6_k attn_v), else all three apart.
#[allow(clippy::type_complexity)]
fn projections(ld: &mut Loader, p: &str) -> Result<(Option<Tensor>, Option<Tensor>, Tensor, Tensor, Tensor)> {
    let Dims { d, hq, hkv, dh, .. } = ld.c.dims();
    let name = |s: &str| format!("{p}.self_attn.{s}_proj.weight");
    let part = |s: &str| (name(s), if s == "q" { hq * dh } else { hkv * dh });
    let apart = |ld: &mut Loader, s: &str| {
        let (n, rows) = part(s);
        ld.tensor(&n, &[rows, d])
    };
    if let Some((t, mut views)) = stacked(ld, &[part("q"), part("k"), part("v")], d)? {
        ld.count(3);
        let (v, k, q) = (views.pop().unwrap(), views.pop().unwrap(), views.pop().unwrap());
        return Ok((Some(t), None, q, k, v));
    }
    let (qk, q, k) = match stacked(ld, &[part("q"), part("k")], d)? {
        Some((t, mut views)) => {
            ld.count(2);
            let (k, q) = (views.pop().unwrap(), views.pop().unwrap());
            (Some(t), q, k)
        }
        None => (None, apart(ld, "q")?, apart(ld, "k")?),
    };
    Ok((None, qk, q, k, apart(ld, "v")?))
}

/// Layer `p`'s q_norm row repeated for the Hq heads, then k_norm's for the Hkv (not counted):
/// in their dtype, or in f32 when the two differ.
fn qk_norm(ld: &Loader, p: &str) -> Result<Tensor> {
    let Dims { hq, hkv, dh, .. } = ld.c.dims();
    let name = |s: &str| format!("{p}.self_attn.{s}_norm.weight");
    let (dq, q) = ld.bytes(&name("q"), &[dh])?;
    let (dk, k) = ld.bytes(&name("k"), &[dh])?;
    let (dt, q, k) = match dq == dk {
        true => (dq, q.into_owned(), k.into_owned()),
        false => {
            let f = |d: DType, b: &[u8]| DType::F32.encode_f32(&d.decode_f32(b));
            (DType::F32, f(dq, &q), f(dk, &k))
        }
    };
    let t = ld.dev.alloc(dt, &[hq + hkv, dh])?;
    ld.dev.upload(&t, &[q.repeat(hq), k.repeat(hkv)].concat())?;
    Ok(t)
}

/// Random weights with a model-like scale: norms ~1, matrices ~1/sqrt(fan_in), embeddings ~0.1.
fn random_values(name: &str, shape: &[usize], r: &mut Rng) -> Vec<f32> {
    let n: usize = shape.iter().product();
    if shape.len() == 1 {
        (0..n).map(|_| 1.0 + 0.05 * r.normal() as f32).collect()
    } else if name.contains("embed") {
        (0..n).map(|_| 0.1 * r.normal() as f32).collect()
    } else {
        let s = 1.0 / (shape[1] as f64).sqrt();
        // uniform with the normal's variance: fast to draw for ~600M values
        (0..n).map(|_| ((r.uniform() * 2.0 - 1.0) * s * 1.732) as f32).collect()
    }
}

/// q, k and v through a layer's stacked weights: one linear for the three projections (into `qkv`),
/// then the q/k norm + RoPE with k and v written to the KV pools in one kernel (`RmsNormRopeKv`),
/// for any number of tokens, where the device has it. A one-token step without it (or Llama's,
/// without a q/k norm) takes the norm + RoPE of the q and k heads together (into `qk`; a RoPE alone
/// for Llama) and a `KvWrite`. The rows are the bits the separate projections and calls give.
struct QkOne<'a> {
    qkv: &'a Tensor,
    qk: &'a Tensor,
    pos: &'a Tensor,
    eps: f32,
    fusions: &'a Fusions,
}

impl QkOne<'_> {
    /// q [T, Hq, Dh] (a view), k and v written to `pools` at `slots`; or None (nothing recorded)
    /// where the weights are not stacked, or for several tokens without the fused op.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        l: &Layer,
        w: &Weights,
        h: &Normed,
        t: usize,
        (hq, hkv, dh): (usize, usize, usize),
        pools: [&Tensor; 2],
        slots: &Tensor,
        dev: &dyn Backend,
    ) -> Result<Option<Tensor>> {
        let Some(qkv) = l.qkv.as_ref().filter(|_| l.q_norm.is_some() == l.qk_norm.is_some()) else {
            return Ok(None);
        };
        let (cos, sin) = (&w.rope.cos, &w.rope.sin);
        let fused = Op::RmsNormRopeKv {
            eps: self.eps,
            rotary_dim: dh,
        };
        let x = self.qkv.view(0, &[t, hq + 2 * hkv, dh])?;
        let q = self.qk.view(0, &[t, hq, dh])?;
        // the q/k norm weight where the device runs the fused op
        let fused_norm = l.qk_norm.as_ref().filter(|wn| {
            let (ins, outs) = ([&x, *wn, self.pos, cos, sin, slots], [&q, pools[0], pools[1]]);
            dev.supports(&OpDesc::of(&fused, &ins, &outs)).is_yes()
        });
        if t > 1 && fused_norm.is_none() {
            return Ok(None);
        }
        if let Some(wn) = fused_norm {
            // the projection inside the op where the device adds its partials in the tail's kernel
            let lin = Op::LinearRmsNormRopeKv {
                eps: self.eps,
                rotary_dim: dh,
            };
            let (ins, outs) = (
                [h.tensor(), qkv, wn, self.pos, cos, sin, slots],
                [&q, pools[0], pools[1]],
            );
            if self.fusions.fuses(dev, &lin, &ins, &outs, [qkv, wn]) {
                let rows = h.rows(dev)?;
                dev.run(&lin, &[rows, qkv, wn, self.pos, cos, sin, slots], &outs)?;
                return Ok(Some(q));
            }
            h.linear(dev, qkv, &self.qkv.view(0, &[t, (hq + 2 * hkv) * dh])?)?;
            dev.run(&fused, &[&x, wn, self.pos, cos, sin, slots], &outs)?;
            return Ok(Some(q));
        }
        h.linear(dev, qkv, &self.qkv.view(0, &[t, (hq + 2 * hkv) * dh])?)?;
        let x = self.qkv.view(0, &[1, hq + hkv, dh])?;
        let qk = self.qk.view(0, &[1, hq + hkv, dh])?;
        match &l.qk_norm {
            Some(wn) => {
                let op = Op::RmsNormRope {
                    eps: self.eps,
                    rotary_dim: dh,
                };
                dev.run(&op, &[&x, wn, self.pos, cos, sin], &[&qk])?
            }
            None => dev.run(&Op::Rope { rotary_dim: dh }, &[&x, self.pos, cos, sin], &[&qk])?,
        }
        let (nq, nk) = (hq * dh, hkv * dh);
        let k1 = self.qk.view(nq, &[1, hkv, dh])?;
        let v0 = self.qkv.view(nq + nk, &[1, hkv, dh])?;
        dev.run(&Op::KvWrite, &[&k1, &v0, slots], &pools)?;
        Ok(Some(q))
    }
}

impl QkOne<'_> {
    /// The projection, then q/k norm, RoPE, the cache write and attention in one op
    /// (`RmsNormRopeKvAttention`, into `att`) where the device runs it for this batch (wgpu: a
    /// lone decode step); false (nothing recorded) otherwise.
    #[allow(clippy::too_many_arguments)]
    fn attend(
        &self,
        l: &Layer,
        w: &Weights,
        h: &Normed,
        b: &Batch,
        (hq, hkv, dh): (usize, usize, usize),
        pools: [&Tensor; 2],
        att: &Tensor,
        dev: &dyn Backend,
    ) -> Result<bool> {
        let Some(wn) = l.qk_norm.as_ref().filter(|_| l.q_norm.is_some()) else {
            return Ok(false);
        };
        // q and k stacked with v apart: two projections into one token's row of q, k, v
        if l.qkv.is_none() && (l.qk.is_none() || b.t != 1) {
            return Ok(false);
        }
        let fused = Op::RmsNormRopeKvAttention {
            eps: self.eps,
            rotary_dim: dh,
            scale: 1.0 / (dh as f32).sqrt(),
            block_size: pools[0].shape[1],
        };
        let x = self.qkv.view(0, &[b.t, hq + 2 * hkv, dh])?;
        let ins = [
            &x,
            wn,
            self.pos,
            &w.rope.cos,
            &w.rope.sin,
            &b.slots,
            &b.block_tables,
            &b.seqs,
        ];
        let outs = [att, pools[0], pools[1]];
        if !dev.supports(&OpDesc::of(&fused, &ins, &outs)).is_yes() {
            return Ok(false);
        }
        match (&l.qkv, &l.qk) {
            (Some(qkv), _) => h.linear(dev, qkv, &self.qkv.view(0, &[b.t, (hq + 2 * hkv) * dh])?)?,
            (None, Some(qk)) => {
                // where the norm is pending each projection reads it (the sum stored twice, the
                // same values): three dispatches for q/k/v and attention, not eight
                h.linear(dev, qk, &self.qkv.view(0, &[1, (hq + hkv) * dh])?)?;
                h.linear(dev, &l.v, &self.qkv.view((hq + hkv) * dh, &[1, hkv * dh])?)?;
            }
            (None, None) => unreachable!("checked above"),
        }
        dev.run(&fused, &ins, &outs)?;
        Ok(true)
    }
}

/// From this many rows a forward submits its first layer on its own: the device starts on it
/// while the host records the other layers, where one submit at the end left the device idle for
/// the whole recording (a 2048-token prefill's ~230 dispatches). One-token steps keep one submit a
/// step: the engine records step i + 1 while the device runs step i.
const EARLY_SUBMIT_ROWS: usize = 64;

/// Records one batched forward over the packed tokens of `b` (several sequences, each at its own
/// positions), K and V written to the pools at the tokens' slots and attention read through the
/// block tables; leaves the logits of `b.sample_rows` in `ws.logits[..r]`.
pub fn forward_paged(
    w: &Weights,
    ws: &BatchWorkspace,
    pools: &KvPools,
    b: &Batch,
    c: &Config,
    dev: &dyn Backend,
    hidden: Hidden,
) -> Result<()> {
    let (t, Dims { d, f, hq, hkv, dh, v }) = (b.t, c.dims());
    let rows = |x: &Tensor, shape: &[usize]| x.view(0, shape);
    let (x, x2) = (rows(&ws.x[0], &[t, d])?, rows(&ws.x[1], &[t, d])?);
    let h = rows(&ws.h, &[t, d])?;
    let (q0, q1) = (rows(&ws.q[0], &[t, hq, dh])?, rows(&ws.q[1], &[t, hq, dh])?);
    let (k0, k1) = (rows(&ws.k[0], &[t, hkv, dh])?, rows(&ws.k[1], &[t, hkv, dh])?);
    let vv = rows(&ws.v, &[t, hkv, dh])?;
    let att = rows(&ws.att, &[t, hq, dh])?;
    let o = rows(&ws.o, &[t, d])?;
    let gu = rows(&ws.gate_up, &[t, 2 * f])?;
    let act = rows(&ws.act, &[t, f])?;
    let norm = Op::RmsNorm {
        eps: c.rms_norm_eps,
        unit_offset: false,
    };
    let add_norm = Op::AddRmsNorm {
        eps: c.rms_norm_eps,
        unit_offset: false,
    };
    let norm_rope = Op::RmsNormRope {
        eps: c.rms_norm_eps,
        rotary_dim: dh,
    };
    let rope = Op::Rope { rotary_dim: dh };
    let attention = Op::PagedAttention {
        scale: 1.0 / (dh as f32).sqrt(),
        block_size: pools.block_size,
    };
    let pos = &b.positions;
    // 1. x = embed[ids]; h = rmsnorm(x)
    dev.run(&Op::Embedding, &[&w.embed, &b.ids], &[&x])?;
    hidden(0, dev, &x)?;
    dev.run(&norm, &[&x, &w.layers[0].in_norm], &[&h])?;
    // the input of a layer's q/k/v projection: the previous layer's last add + norm, recorded with
    // the projection where the device reads the norm inside it
    let fusions = Fusions::default();
    let mut input = Normed::ready(&h);
    for (li, l) in w.layers.iter().enumerate() {
        // 2. q, k, v projections of every token
        let one = QkOne {
            qkv: &ws.qkv,
            qk: &ws.qk,
            pos,
            eps: c.rms_norm_eps,
            fusions: &fusions,
        };
        let kv = [&pools.k[li], &pools.v[li]];
        if one.attend(l, w, &input, b, (hq, hkv, dh), kv, &att, dev)? {
            if li > 0 {
                hidden(li, dev, &x)?;
            }
        } else {
            let q = match one.record(l, w, &input, t, (hq, hkv, dh), kv, &b.slots, dev)? {
                Some(q1) => q1,
                None => {
                    let h = input.rows(dev)?;
                    dev.run(&Op::Linear, &[h, &l.q], &[&q0.reshape(&[t, hq * dh])?])?;
                    dev.run(&Op::Linear, &[h, &l.k], &[&k0.reshape(&[t, hkv * dh])?])?;
                    dev.run(&Op::Linear, &[h, &l.v], &[&vv.reshape(&[t, hkv * dh])?])?;
                    // 3. q/k norm (Qwen3) and RoPE at each token's own position
                    match (&l.q_norm, &l.k_norm) {
                        (Some(qn), Some(kn)) => {
                            dev.run(&norm_rope, &[&q0, qn, pos, &w.rope.cos, &w.rope.sin], &[&q1])?;
                            dev.run(&norm_rope, &[&k0, kn, pos, &w.rope.cos, &w.rope.sin], &[&k1])?;
                        }
                        _ => {
                            dev.run(&rope, &[&q0, pos, &w.rope.cos, &w.rope.sin], &[&q1])?;
                            dev.run(&rope, &[&k0, pos, &w.rope.cos, &w.rope.sin], &[&k1])?;
                        }
                    }
                    // 4. K, V into the pools at the tokens' slots
                    dev.run(&Op::KvWrite, &[&k1, &vv, &b.slots], &[&pools.k[li], &pools.v[li]])?;
                    q1.clone()
                }
            };
            if li > 0 {
                // the residual the previous layer left (stored with this layer's projection)
                hidden(li, dev, &x)?;
            }
            // attention through the block tables
            dev.run(
                &attention,
                &[&q, &pools.k[li], &pools.v[li], &b.block_tables, &b.seqs],
                &[&att],
            )?;
        }
        // 5. x2 = x + att Woᵀ; h = rmsnorm(x2), read by the MLP's projection
        let att_rows = att.reshape(&[t, hq * dh])?;
        let post = Normed::after_linear(
            dev,
            &add_norm,
            [&att_rows, &l.o],
            [&x, &l.post_norm],
            [&o, &x2, &h],
            &fusions,
        )?;
        // 6. MLP; x = x2 + mlp; h = the next layer's norm of x (with its projection) or the final
        let last = li + 1 == w.layers.len();
        let then = AddNorm {
            op: &add_norm,
            a: &x2,
            nw: w.layers.get(li + 1).map_or(&w.final_norm, |next| &next.in_norm),
            sum: &x,
            h: &h,
            fusions: &fusions,
        };
        input = mlp(dev, &post, [&l.gate_up, &l.down], &gu, &act, &o, then)?;
        if li == 0 && t >= EARLY_SUBMIT_ROWS {
            dev.flush()?;
        }
        if last {
            input.rows(dev)?;
            hidden(li + 1, dev, &x)?;
        }
    }
    // 7. the sampled rows of h (an embedding lookup with h as the table), then the LM head
    if b.r == 0 {
        return Ok(());
    }
    let hs = rows(&ws.hs, &[b.r, d])?;
    dev.run(&Op::Embedding, &[&h, &b.sample_rows], &[&hs])?;
    dev.run(&Op::Linear, &[&hs, &w.lm_head], &[&rows(&ws.logits, &[b.r, v])?])?;
    Ok(())
}
