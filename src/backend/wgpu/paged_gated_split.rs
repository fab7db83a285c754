//! paged_gated_attention around paged_attention's kernels, where those take the shapes (a query
//! group of at most MAX_GROUP heads, head_dim a multiple of 16): after the new keys and values go
//! into the pools (paged_gated_attention_kv.wgsl, as in the two-dispatch path),
//!   1. paged_gated_q.wgsl: each query row's query half normed (x̂ (1 + qn), the same fixed-shape
//!      tree as paged_gated_attention.wgsl) and rotated at the row's position, into a scratch
//!      [T, Hq, Dh] f32; a row whose description does not hold together gets NaN;
//!   2. paged_attention over that scratch and the pools: a row's keys in fixed partitions combined
//!      in order (so a long row is many workgroups' work, not one's), and under batch invariance
//!      off a lone sequence's prefill chunk on the prefill tile (paged_attention_prefill.rs);
//!   3. paged_gated_out.wgsl: the attention output times sigmoid(gate), in o's dtype.
//!
//! The per-row single kernel (paged_gated_attention.wgsl) walks a row's keys in one workgroup:
//! at a 2048-token context that is most of a Qwen3.5 decode step. Every step computes a row from
//! its own data in an order fixed by the row alone, so the split keeps batch invariance.
use super::kernel::{grid, read, write, KernelKey};
use super::paged_attention::{record_parts, Params};
use super::{paged_attention_prefill, Support, WgpuBackend};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::tensor::Tensor;

/// Workgroup size of the gate kernel (one thread an element).
const OUT_WG: u32 = 64;

/// `Op::PagedAttention` over the scratch query and the gated op's pools (`o[1]`, `o[2]`).
fn plain(op: &Op, pool_bs: usize) -> Op {
    let Op::PagedGatedAttention { scale, .. } = *op else {
        unreachable!("paged_gated_split got {}", op.name())
    };
    Op::PagedAttention {
        scale,
        block_size: pool_bs,
    }
}

/// Whether paged_attention takes the gated op's shapes.
pub(super) fn takes(b: &WgpuBackend, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> bool {
    let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], o[0].shape[2]);
    let d = |x: &Tensor| TensorDesc::new(x.dtype, &x.shape);
    let desc = OpDesc::new(
        plain(op, o[1].shape[1]),
        vec![
            TensorDesc::new(DType::F32, &[t, hq, dh]),
            d(o[1]),
            d(o[2]),
            d(i[7]),
            d(i[8]),
        ],
        vec![TensorDesc::new(DType::F32, &[t, hq, dh])],
    );
    matches!(super::paged_attention::supports(b, &desc), Support::Yes)
}

/// Steps 1-3 above; the pools already hold the new keys and values. `i`, `o`: the gated op's
/// operands (qg, k, v, qn, kn, cos, sin, bt, seqs; o, kp, vp).
pub(super) fn record(
    b: &WgpuBackend,
    op: &Op,
    p: Params,
    consts: &[(&str, String)],
    i: &[&Tensor],
    o: &[&Tensor],
) -> Result<()> {
    let (t, hq, dh) = (p.t as usize, p.hq as usize, p.dh as usize);
    let n = t * hq * dh;
    let q = b.scratch("paged-gated-q", DType::F32, n)?.reshape(&[t, hq, dh])?;
    let att = b.scratch("paged-gated-att", DType::F32, n)?.reshape(&[t, hq, dh])?;
    let params = bytemuck::bytes_of(&p);
    let head = || [b.source("paged_attention.wgsl"), b.source("paged_pool.wgsl")].concat();
    let u = DType::U32;
    // 1. the normed, rotated query of every row and head
    let key = KernelKey {
        entry: "paged_gated_q",
        bindings: vec![
            read("qg", i[0].dtype),
            read("qn", i[3].dtype),
            read("cos", DType::F32),
            read("sin", DType::F32),
            read("bt", u),
            read("seqs", u),
            write("q", DType::F32),
        ],
        variant: format!("dh{dh}bs{}", p.bs),
    };
    // the query norm's tree is wg_sum's over the NT threads
    let q_source = || {
        let body = format!(
            "{}{}{}",
            head(),
            b.source("wg_tree.wgsl"),
            b.source("paged_gated_q.wgsl")
        );
        let nt = consts
            .iter()
            .find(|(c, _)| *c == "NT")
            .map(|(_, v)| v.clone())
            .expect("paged_attention's consts hold NT");
        (body, consts.iter().cloned().chain([("WG", nt)]).collect())
    };
    let tensors = [i[0], i[3], i[5], i[6], i[7], i[8], &q];
    b.dispatch(&key, q_source, params, &tensors, grid((t * hq) as u32))?;
    // 2. attention over the pools
    let plain = plain(op, o[1].shape[1]);
    let ins = [&q, o[1], o[2], i[7], i[8]];
    if !(paged_attention_prefill::takes(b, &q, i[7]) && paged_attention_prefill::record(b, &plain, &ins, &att)?) {
        record_parts(b, p, consts.to_vec(), &ins, &att)?;
    }
    // 3. the gate
    let key = KernelKey {
        entry: "paged_gated_out",
        bindings: vec![
            read("qg", i[0].dtype),
            read("att", DType::F32),
            read("bt", u),
            read("seqs", u),
            write("o", o[0].dtype),
        ],
        variant: format!("bs{}", p.bs),
    };
    let out_source = || {
        let mut c = consts.to_vec();
        c.push(("WG", format!("{OUT_WG}u")));
        (format!("{}{}", head(), b.source("paged_gated_out.wgsl")), c)
    };
    let tensors = [i[0], &att, i[7], i[8], o[0]];
    b.dispatch(&key, out_source, params, &tensors, grid((n as u32).div_ceil(OUT_WG)))
}
