//! Qwen3.5 in the batched engine: one forward over a packed batch of sequences (model/paged.rs's
//! `Batch`), the full-attention layers over the paged KV pools, the linear-attention layers over
//! per-sequence state slots.
//!
//! KV pools: only the full-attention layers have keys, so `kv_pools` allocates one K/V pair per
//! full layer, and full layer `li` uses pool `full_layer_pool(li)` = the number of full layers
//! before it (the tiny model's layers [linear, linear, linear, full] -> layer 3 uses pool 0).
//! State slots (`HybridState`): per linear layer a conv pool [max_seqs, K-1, conv_dim] and a
//! recurrent pool [max_seqs, nv, dk, dv], f32; a sequence keeps its slot for as long as it runs,
//! and the step's descriptor (`op::state_seq_words`: first row, count, slot, fresh) tells the ops
//! whose state each row continues. A chunk starting at position 0 starts fresh (the slot's old
//! contents are never read, so a slot needs no clearing when it changes hands).
//! Every op of the step computes a row from that row's own sequence only (paged attention by its
//! block table, the state ops by its slot, the rest row by row), so a sequence's logits do not
//! depend on what else is in the batch; the state ops run the recurrent form for every token, so
//! neither do they depend on how its prompt was chunked (tests/qwen3_5_paged.rs).
use super::{hybrid, lm_head, stacked_one, Mixer, Weights};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::model::config::{Config, Dims, LayerType};
use crate::model::lone::Hidden;
use crate::model::normed::{Fusions, Normed};
use crate::model::paged::{Batch, KvPools};
use crate::op::{gdn_conv_norm_wiring, Op, OpDesc};
use crate::tensor::Tensor;

/// Pools for the full-attention layers only (`full_layer_pool` maps a layer to its pool).
pub fn kv_pools(c: &Config, dev: &dyn Backend, num_blocks: usize, block_size: usize, dtype: DType) -> Result<KvPools> {
    let full = hybrid(c)?.layer_types.iter().filter(|t| **t == LayerType::Full).count();
    KvPools::for_layers(c, dev, full, num_blocks, block_size, dtype)
}

/// The KV pool of layer `li`: the number of full-attention layers before it (None for a linear
/// layer).
pub fn full_layer_pool(c: &Config, li: usize) -> Option<usize> {
    let types = &c.hybrid.as_ref()?.layer_types;
    match types.get(li)? {
        LayerType::Full => Some(types[..li].iter().filter(|t| **t == LayerType::Full).count()),
        LayerType::Linear => None,
    }
}

/// The linear-attention layers' state slots for up to `max_seqs` running sequences: per linear
/// layer (in layer order) a conv pool and a recurrent pool.
pub struct HybridState {
    pub max_seqs: usize,
    /// [max_seqs, K-1, conv_dim] f32 per linear layer
    pub conv: Vec<Tensor>,
    /// [max_seqs, nv, dk, dv] f32 per linear layer
    pub rec: Vec<Tensor>,
}

impl HybridState {
    pub fn new(c: &Config, dev: &dyn Backend, max_seqs: usize) -> Result<HybridState> {
        let h = hybrid(c)?;
        let (mut conv, mut rec) = (Vec::new(), Vec::new());
        for _ in h.layer_types.iter().filter(|t| **t == LayerType::Linear) {
            conv.push(dev.alloc(DType::F32, &[max_seqs, h.linear_conv_kernel_dim - 1, h.conv_dim()])?);
            rec.push(dev.alloc(
                DType::F32,
                &[
                    max_seqs,
                    h.linear_num_value_heads,
                    h.linear_key_head_dim,
                    h.linear_value_head_dim,
                ],
            )?);
        }
        Ok(HybridState { max_seqs, conv, rec })
    }
}

/// Scratch tensors of a batched step, allocated once for `t_max` tokens and `r_max` sampled rows;
/// each step uses their first rows.
pub struct HybridWorkspace {
    pub t_max: usize,
    pub r_max: usize,
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
    /// [T, 2F]: gate and up interleaved
    gate_up: Tensor,
    act: Tensor,
    /// the sampled rows of h (x after the final norm), [r_max, D]
    hs: Tensor,
    /// a one-token step's stacked mixer projections (`stacked_one`)
    one: Tensor,
    /// [r_max, V]
    pub logits: Tensor,
    /// [r_max] u32: the argmax of each logits row
    pub next: Tensor,
}

impl HybridWorkspace {
    pub fn new(c: &Config, dev: &dyn Backend, t_max: usize, r_max: usize) -> Result<HybridWorkspace> {
        let hc = hybrid(c)?;
        let Dims { d, f, hq, hkv, dh, v } = c.dims();
        let (nv, dv, cd) = (hc.linear_num_value_heads, hc.linear_value_head_dim, hc.conv_dim());
        let a = |s: &[usize]| dev.alloc(DType::F32, s);
        Ok(HybridWorkspace {
            t_max,
            r_max,
            x: [a(&[t_max, d])?, a(&[t_max, d])?],
            h: a(&[t_max, d])?,
            mix: a(&[t_max, d])?,
            qkv: a(&[t_max, cd])?,
            conv: a(&[t_max, cd])?,
            z: a(&[t_max, nv, dv])?,
            b: a(&[t_max, nv])?,
            a: a(&[t_max, nv])?,
            core: a(&[t_max, nv, dv])?,
            normed: a(&[t_max, nv, dv])?,
            qg: a(&[t_max, hq, 2 * dh])?,
            k: a(&[t_max, hkv, dh])?,
            v: a(&[t_max, hkv, dh])?,
            att: a(&[t_max, hq, dh])?,
            gate_up: a(&[t_max, 2 * f])?,
            act: a(&[t_max, f])?,
            hs: a(&[r_max, d])?,
            one: a(&[1, super::stacked_rows(c)?])?,
            logits: a(&[r_max, v])?,
            next: dev.alloc(DType::U32, &[r_max])?,
        })
    }
}

/// Records one batched step: `b`'s T tokens of S sequences through every layer, the full layers
/// over `pools` (through `b`'s block tables), the linear layers over `state` (through
/// `state_seqs` [S, 4], `op::state_seq_words`), and the logits of `b`'s sample rows into
/// `ws.logits` [R, V]. The same layer math as `qwen3_5::forward`, with the per-sequence ops.
#[allow(clippy::too_many_arguments)]
pub fn forward_paged(
    w: &Weights,
    ws: &HybridWorkspace,
    pools: &KvPools,
    state: &HybridState,
    b: &Batch,
    state_seqs: &Tensor,
    c: &Config,
    dev: &dyn Backend,
    hidden: Hidden,
) -> Result<()> {
    let hc = hybrid(c)?;
    let (t, Dims { d, f, hq, hkv, dh, v }) = (b.t, c.dims());
    let (nv, dv, cd) = (hc.linear_num_value_heads, hc.linear_value_head_dim, hc.conv_dim());
    if t > ws.t_max || b.r > ws.r_max {
        return Err(Error::Other(format!(
            "batch of {t} tokens / {} sampled rows exceeds the workspace's {} / {}",
            b.r, ws.t_max, ws.r_max
        )));
    }
    let rows = |x: &Tensor, shape: &[usize]| x.view(0, shape);
    let (x, x2) = (rows(&ws.x[0], &[t, d])?, rows(&ws.x[1], &[t, d])?);
    let (h, mix) = (rows(&ws.h, &[t, d])?, rows(&ws.mix, &[t, d])?);
    let (qkv_t, conv_t) = (rows(&ws.qkv, &[t, cd])?, rows(&ws.conv, &[t, cd])?);
    let (z, core, normed) = (
        rows(&ws.z, &[t, nv, dv])?,
        rows(&ws.core, &[t, nv, dv])?,
        rows(&ws.normed, &[t, nv, dv])?,
    );
    let (bt, at) = (rows(&ws.b, &[t, nv])?, rows(&ws.a, &[t, nv])?);
    let qg = rows(&ws.qg, &[t, hq, 2 * dh])?;
    let (k, vv) = (rows(&ws.k, &[t, hkv, dh])?, rows(&ws.v, &[t, hkv, dh])?);
    let att = rows(&ws.att, &[t, hq, dh])?;
    let (gate_up, act) = (rows(&ws.gate_up, &[t, 2 * f])?, rows(&ws.act, &[t, f])?);
    // every norm of the decoder is x̂ (1 + w); the linear attention's output norm is gated
    let norm = Op::RmsNorm {
        eps: c.rms_norm_eps,
        unit_offset: true,
    };
    let add_norm = Op::AddRmsNorm {
        eps: c.rms_norm_eps,
        unit_offset: true,
    };
    let attention = Op::PagedGatedAttention {
        scale: 1.0 / (dh as f32).sqrt(),
        block_size: pools.block_size,
        eps: c.rms_norm_eps,
        rotary_dim: hc.rotary_dim,
    };
    let gdn_norm = Op::GdnConvNorm { eps: c.rms_norm_eps };
    let mut gdn_norm_fused = None;
    // 1. x = embed[ids]                                                        [T, D]
    match w.embed.as_slice() {
        [(0, table)] => dev.run(&Op::Embedding, &[table, &b.ids], &[&x])?,
        shards => {
            for (first, table) in shards {
                dev.run(&Op::EmbeddingShard { first: *first }, &[table, &b.ids], &[&x])?;
            }
        }
    }
    hidden(0, dev, &x)?;
    // 2. h = rmsnorm(x); each layer's later norms are fused with the residual add before them
    dev.run(&norm, &[&x, &w.layers[0].in_norm], &[&h])?;
    // a layer's input: the previous layer's last add + norm, recorded with the mixer's stacked
    // projection where the device reads the norm inside it
    let fusions = Fusions::default();
    let mut input = Normed::ready(&h);
    let mut linear = 0;
    for (li, l) in w.layers.iter().enumerate() {
        match &l.mixer {
            Mixer::Linear {
                qkv,
                z: zw,
                b: bw,
                a: aw,
                conv,
                a_log,
                dt_bias,
                norm: gnorm,
                out,
            } => {
                let (cs, rs) = match (state.conv.get(linear), state.rec.get(linear)) {
                    (Some(cs), Some(rs)) => (cs, rs),
                    _ => {
                        return Err(Error::Other(format!(
                            "layer {li}: the hybrid state has {} linear layers",
                            state.conv.len()
                        )))
                    }
                };
                linear += 1;
                // 3. qkv, z, b, a = h Wᵀ                                    [T, conv_dim], [T, nv*dv], [T, nv]
                let shapes: [&[usize]; 4] = [&[1, cd], &[1, nv, dv], &[1, nv], &[1, nv]];
                let (qkv_in, z_in, b_in, a_in) = match stacked_one(l, &input, &ws.one, t, &shapes, dev)? {
                    Some(v) => (v[0].clone(), v[1].clone(), v[2].clone(), v[3].clone()),
                    None => {
                        let h = input.rows(dev)?;
                        dev.run(&Op::Linear, &[h, qkv], &[&qkv_t])?;
                        dev.run(&Op::Linear, &[h, zw], &[&z.reshape(&[t, nv * dv])?])?;
                        dev.run(&Op::Linear, &[h, bw], &[&bt])?;
                        dev.run(&Op::Linear, &[h, aw], &[&at])?;
                        (qkv_t.clone(), z.clone(), bt.clone(), at.clone())
                    }
                };
                // 4. causal conv1d + SiLU, each sequence over [its slot's conv state | its rows]
                // 5. gated delta rule, each sequence from its slot's recurrent state, then the
                //    gated RMSNorm per value head                                [T, nv, dv]
                // one op where the device has it, else its three parts (conv_t, core between)
                let ins = [&qkv_in, conv, &b_in, &a_in, a_log, dt_bias, state_seqs, &z_in, gnorm];
                let outs = [&normed, rs, cs];
                let fused =
                    *gdn_norm_fused.get_or_insert_with(|| dev.supports(&OpDesc::of(&gdn_norm, &ins, &outs)).is_yes());
                if fused {
                    dev.run(&gdn_norm, &ins, &outs)?;
                } else {
                    for (op, i, o) in gdn_conv_norm_wiring(&gdn_norm, &ins, &outs, &conv_t, &core) {
                        dev.run(&op, &i, &o)?;
                    }
                }
                // 6. out_proj                                                  [T, D]
                dev.run(&Op::Linear, &[&normed.reshape(&[t, nv * dv])?, out], &[&mix])?;
            }
            Mixer::Full {
                q,
                k: kw,
                v: vw,
                o,
                q_norm,
                k_norm,
            } => {
                let pool = full_layer_pool(c, li)
                    .filter(|&p| p < pools.k.len())
                    .ok_or_else(|| Error::Other(format!("layer {li}: no KV pool for this full-attention layer")))?;
                // 3. qg (query | gate per head), k, v = h Wᵀ                [T, Hq, 2Dh], [T, Hkv, Dh]
                let shapes: [&[usize]; 3] = [&[1, hq, 2 * dh], &[1, hkv, dh], &[1, hkv, dh]];
                let (qg, k, vv) = match stacked_one(l, &input, &ws.one, t, &shapes, dev)? {
                    Some(v) => (v[0].clone(), v[1].clone(), v[2].clone()),
                    None => {
                        let h = input.rows(dev)?;
                        dev.run(&Op::Linear, &[h, q], &[&qg.reshape(&[t, hq * 2 * dh])?])?;
                        dev.run(&Op::Linear, &[h, kw], &[&k.reshape(&[t, hkv * dh])?])?;
                        dev.run(&Op::Linear, &[h, vw], &[&vv.reshape(&[t, hkv * dh])?])?;
                        (qg.clone(), k.clone(), vv.clone())
                    }
                };
                // 4. q/k norm and partial RoPE at each token's position, k/v into the pools,
                //    attention through the block tables, * sigmoid(gate): one op
                dev.run(
                    &attention,
                    &[
                        &qg,
                        &k,
                        &vv,
                        q_norm,
                        k_norm,
                        &w.rope.cos,
                        &w.rope.sin,
                        &b.block_tables,
                        &b.seqs,
                    ],
                    &[&att, &pools.k[pool], &pools.v[pool]],
                )?;
                // 5. o_proj                                                   [T, D]
                dev.run(&Op::Linear, &[&att.reshape(&[t, hq * dh])?, o], &[&mix])?;
            }
        }
        if li > 0 {
            // the residual the previous layer left (stored with this layer's first projection)
            hidden(li, dev, &x)?;
        }
        // 7. x2 = x + mixer, h = rmsnorm(x2) (read by the MLP's projection); x = x2 +
        //    down(silu(gate(h)) * up(h)), h = the next layer's norm of x (with its projection)
        //    or the final one
        let post = Normed::add_norm(&add_norm, [&x, &mix, &l.post_norm], [&x2, &h], &fusions);
        let last = li + 1 == w.layers.len();
        let then = crate::model::AddNorm {
            op: &add_norm,
            a: &x2,
            nw: w.layers.get(li + 1).map_or(&w.final_norm, |next| &next.in_norm),
            sum: &x,
            h: &h,
            fusions: &fusions,
        };
        input = crate::model::mlp(dev, &post, [&l.gate_up, &l.down], &gate_up, &act, &mix, then)?;
        if last {
            input.rows(dev)?;
            hidden(li + 1, dev, &x)?;
        }
    }
    // 8. the sampled rows of h = final_norm(x) (an embedding lookup with h as the table), the LM
    //    head (tied: the embedding matrix); a step of prefill chunks only samples no row
    if b.r == 0 {
        return Ok(());
    }
    let hs = rows(&ws.hs, &[b.r, d])?;
    dev.run(&Op::Embedding, &[&h, &b.sample_rows], &[&hs])?;
    lm_head(w, dev, &hs, &rows(&ws.logits, &[b.r, v])?)
}
