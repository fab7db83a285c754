//! Loading models as users have them: config.json, safetensors, GGUF, tokenizer; the families'
//! batched forwards over paged KV pools (qwen3.rs, qwen3_5/, behind arch.rs; one sequence through
//! them: lone.rs) and what they share (here and load.rs).
pub mod arch;
pub mod bytes;
pub mod chat_template;
pub mod config;
mod config_check;
pub mod default;
pub mod gguf;
pub mod gguf_config;
pub mod gguf_tokenizer;
mod load;
pub mod lone;
pub mod normed;
pub mod paged;
pub mod qwen3;
pub mod qwen3_5;
pub mod safetensors;
pub mod shapes;
pub mod source;
pub mod stream;
pub mod tokenizer;
mod tokenizer_check;

pub use source::{Mix, Source};

use crate::backend::Backend;
use crate::error::Result;
use crate::tensor::Tensor;

/// What a forward leaves on the device.
pub enum Logits {
    /// logits of the last position only, [1, V], in the workspace's logits (first row)
    Last,
    /// logits of every position, [T, V]
    All,
}

/// RoPE tables on the device, [max_ctx, rotary_dim / 2] f32 each (`op::rope_tables_of`).
pub struct Rope {
    pub cos: Tensor,
    pub sin: Tensor,
}

/// The residual add + RMSNorm after the MLP (`Op::AddRmsNorm` of a and the MLP's output with
/// norm weight nw, into sum and h): the next layer's input norm or the final one.
pub(super) struct AddNorm<'a> {
    pub op: &'a crate::op::Op,
    pub a: &'a Tensor,
    pub nw: &'a Tensor,
    pub sum: &'a Tensor,
    pub h: &'a Tensor,
    pub fusions: &'a normed::Fusions,
}

/// The MLP after its norm: out = swiglu(h Wgate_upᵀ) Wdownᵀ, the stacked projection's (gate, up)
/// pairs into `gate_up`, and `then` of out (pending, or recorded with the down projection:
/// `Normed::after_linear`). Where `h` is a pending add + norm and the device reads it inside the
/// projection with the swiglu in its epilogue (`AddRmsNormLinear`, a lone decode step) that, one
/// dispatch; else where the device fuses the swiglu into the projection's epilogue
/// (`LinearSwiGlu`: the tensor-core linear, which a batch-invariant engine takes at every M or
/// never, or a quantized W's matvec) the rows, then that; either way then the down projection
/// from `act`. Else the projection (with the norm read inside it where the device fuses them),
/// then `swiglu_down`.
pub(super) fn mlp<'a>(
    dev: &dyn Backend,
    h: &normed::Normed,
    [w_gate_up, w_down]: [&Tensor; 2],
    gate_up: &Tensor,
    act: &Tensor,
    out: &'a Tensor,
    then: AddNorm<'a>,
) -> Result<normed::Normed<'a>> {
    use crate::op::{Op, OpDesc};
    let down = |act: &Tensor| {
        let AddNorm {
            op,
            a,
            nw,
            sum,
            h,
            fusions,
        } = then;
        normed::Normed::after_linear(dev, op, [act, w_down], [a, nw], [out, sum, h], fusions)
    };
    // a pending add + norm, the projection and its swiglu in one dispatch (a lone decode step);
    // asked first, as a quantized W's LinearSwiGlu would record the add + norm apart
    if h.linear_swiglu(dev, w_gate_up, act)? {
        return down(act);
    }
    if dev
        .supports(&OpDesc::of(&Op::LinearSwiGlu, &[h.tensor(), w_gate_up], &[act]))
        .is_yes()
    {
        dev.run(&Op::LinearSwiGlu, &[h.rows(dev)?, w_gate_up], &[act])?;
        return down(act);
    }
    h.linear(dev, w_gate_up, gate_up)?;
    swiglu_down(dev, gate_up, act, w_down, out)?;
    Ok(normed::Normed::add_norm(
        then.op,
        [then.a, out, then.nw],
        [then.sum, then.h],
        then.fusions,
    ))
}

/// The MLP's tail: out = swiglu(gate_up) Wdownᵀ over the stacked projection's (gate, up) pairs, in
/// one kernel (`SwiGluLinear`) where the device has it, else swiglu into `act`, then the linear.
/// Both give the same bits a row on every backend that has the fused op (it reads the pairs through
/// the swiglu kernel's formula), so the choice never depends on the batch.
fn swiglu_down(dev: &dyn Backend, gate_up: &Tensor, act: &Tensor, down: &Tensor, out: &Tensor) -> Result<()> {
    let op = crate::op::Op::SwiGluLinear;
    if dev
        .supports(&crate::op::OpDesc::of(&op, &[gate_up, down], &[out]))
        .is_yes()
    {
        return dev.run(&op, &[gate_up, down], &[out]);
    }
    dev.run(&crate::op::Op::SwiGlu, &[gate_up], &[act])?;
    dev.run(&crate::op::Op::Linear, &[act, down], &[out])
}
