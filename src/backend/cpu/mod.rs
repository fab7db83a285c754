//! The CPU reference backend: scalar, obvious, every op in every dtype. Inputs are decoded to f32
//! (exact for f16/bf16), math is done in f64 where it accumulates, results are rounded once to the
//! output dtype (round to nearest even). Everything else is checked against this.
mod attention;
mod causal_conv1d;
mod elementwise;
mod embedding;
mod gated_attention;
mod gdn;
mod kv_write;
mod linear;
mod min_p;
mod paged_attention;
mod paged_gated_attention;
mod penalties;
mod reduce;
mod rms_norm;
mod rope;
pub mod sample;

pub use attention::attention;
pub use causal_conv1d::{causal_conv1d, causal_conv1d_batch, silu};
pub use elementwise::{add, swiglu};
pub use embedding::embedding;
pub use gated_attention::{gated_attention, qk_preamble, split_q_gate, GatedAttentionDims};
pub use gdn::{gdn_batch, gdn_chunked, gdn_recurrent, GdnDims};
pub use kv_write::kv_write;
pub use linear::linear;
pub use min_p::min_p;
pub use paged_attention::{gather, paged_attention, PagedDims};
pub use paged_gated_attention::{apply_gate, paged_qk_preamble, positions_and_slots};
pub use penalties::{penalize, penalties};
pub use reduce::{argmax, softmax, topk};
pub use rms_norm::{rms_norm, rms_norm_gated};
pub use rope::rope;
pub use sample::{pick, sample};

use super::{unsupported, Backend, Support};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::{Storage, Tensor};
use std::any::Any;
use std::sync::{Arc, Mutex};

pub struct CpuStorage {
    pub bytes: Mutex<Vec<u8>>,
}

impl Storage for CpuStorage {
    fn capacity_bytes(&self) -> usize {
        self.bytes.lock().unwrap().len()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Default)]
pub struct CpuBackend;

impl CpuBackend {
    pub fn new() -> Self {
        CpuBackend
    }
    fn storage<'a>(&self, t: &'a Tensor) -> Result<&'a CpuStorage> {
        t.storage
            .as_any()
            .downcast_ref::<CpuStorage>()
            .ok_or_else(|| Error::Other(format!("tensor on {} used on cpu", t.device)))
    }
    fn read(&self, t: &Tensor) -> Result<Vec<u8>> {
        let s = self.storage(t)?;
        let b = s.bytes.lock().unwrap();
        let (a, n) = (t.byte_offset(), t.nbytes());
        if a + n > b.len() {
            return Err(Error::Other(format!(
                "cpu: tensor region {a}+{n} past buffer of {} bytes",
                b.len()
            )));
        }
        Ok(b[a..a + n].to_vec())
    }
    fn write(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
        let s = self.storage(t)?;
        let mut b = s.bytes.lock().unwrap();
        let a = t.byte_offset();
        if bytes.len() != t.nbytes() || a + bytes.len() > b.len() {
            return Err(Error::Other(format!(
                "cpu: write of {} bytes to region {a}+{} of {}",
                bytes.len(),
                t.nbytes(),
                b.len()
            )));
        }
        b[a..a + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
    fn f32s(&self, t: &Tensor) -> Result<Vec<f32>> {
        Ok(t.dtype.decode_f32(&self.read(t)?))
    }
    fn u32s(&self, t: &Tensor) -> Result<Vec<u32>> {
        Ok(t.dtype.decode_u32(&self.read(t)?))
    }
    fn put(&self, t: &Tensor, v: &[f32]) -> Result<()> {
        self.write(t, &t.dtype.encode_f32(v))
    }
    /// The head layout, block tables and checked sequences of a paged op (q, a pool, the tables,
    /// seqs): contents a shape check cannot see are checked here, by name.
    fn paged_batch(
        &self,
        op: &Op,
        q: &Tensor,
        pool: &Tensor,
        bt: &Tensor,
        seqs: &Tensor,
    ) -> Result<(PagedDims, Vec<u32>, Vec<crate::op::PagedSeq>)> {
        let p = &pool.shape;
        let d = PagedDims {
            hq: q.shape[1],
            hkv: p[2],
            dh: p[3],
            bs: p[1],
            mb: bt.shape[1],
        };
        let tables = self.u32s(bt)?;
        let s = crate::op::check_paged_batch(op.name(), q.shape[0], p[0], d.bs, &tables, d.mb, &self.u32s(seqs)?)?;
        Ok((d, tables, s))
    }
    /// `f` over the tensor's bytes where they lie: a KV pool is written a few rows at a time, so
    /// it is not copied whole (a copy per layer per step grows with --kv-memory).
    fn with_bytes_mut<R>(&self, t: &Tensor, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let s = self.storage(t)?;
        let mut b = s.bytes.lock().unwrap();
        let (a, n) = (t.byte_offset(), t.nbytes());
        if a + n > b.len() {
            return Err(Error::Other(format!(
                "cpu: tensor region {a}+{n} past buffer of {} bytes",
                b.len()
            )));
        }
        Ok(f(&mut b[a..a + n]))
    }
    /// The blocks of `pool` the sequences read (block j < ceil(kv_len / bs) of each table row),
    /// decoded to f32 one after another, and the tables renumbered to them: what
    /// `paged_attention` reads, without decoding the rest of the pool.
    fn read_blocks(
        &self,
        pool: &Tensor,
        tables: &[u32],
        seqs: &[crate::op::PagedSeq],
        d: PagedDims,
    ) -> Result<(Vec<f32>, Vec<u32>)> {
        let rb = pool.dtype.nbytes(d.bs * d.hkv * d.dh);
        let mut index = std::collections::HashMap::new();
        let mut out = Vec::new();
        let mut renum = vec![0u32; tables.len()];
        self.with_bytes_mut(pool, |bytes| {
            for (s, sq) in seqs.iter().enumerate() {
                for j in 0..(sq.kv_len as usize).div_ceil(d.bs) {
                    let b = tables[s * d.mb + j];
                    let next = index.len() as u32;
                    renum[s * d.mb + j] = *index.entry(b).or_insert_with(|| {
                        let at = b as usize * rb;
                        out.extend(pool.dtype.decode_f32(&bytes[at..at + rb]));
                        next
                    });
                }
            }
        })?;
        Ok((out, renum))
    }
    fn put_u32(&self, t: &Tensor, v: &[u32]) -> Result<()> {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.write(t, &b)
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn supports(&self, desc: &OpDesc) -> Support {
        match desc.check() {
            Ok(()) => Support::Yes,
            Err(e) => Support::No(e.to_string()),
        }
    }

    fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let n = dtype.nbytes(crate::tensor::numel(shape));
        Ok(Tensor {
            dtype,
            shape: shape.to_vec(),
            offset: 0,
            storage: Arc::new(CpuStorage {
                bytes: Mutex::new(vec![0u8; n.div_ceil(4) * 4]),
            }),
            device: Arc::from("cpu"),
        })
    }

    fn upload(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
        self.write(t, bytes)
    }

    fn download(&self, t: &Tensor) -> Result<Vec<u8>> {
        self.read(t)
    }

    fn run(&self, op: &Op, inputs: &[&Tensor], outputs: &[&Tensor]) -> Result<()> {
        let desc = OpDesc::of(op, inputs, outputs);
        if let Support::No(r) = self.supports(&desc) {
            return Err(unsupported(&desc, "cpu", &r));
        }
        let (i, o) = (inputs, outputs);
        match op {
            Op::Embedding => {
                let d = i[0].shape[1];
                let y = embedding(&self.f32s(i[0])?, d, &self.u32s(i[1])?);
                self.put(o[0], &y)
            }
            Op::EmbeddingShard { first } => {
                let (vs, d) = (i[0].shape[0], i[0].shape[1]);
                let table = self.f32s(i[0])?;
                let mut y = self.read(o[0])?;
                let s = o[0].dtype.size();
                for (t, &id) in self.u32s(i[1])?.iter().enumerate() {
                    let r = (id as usize).wrapping_sub(*first);
                    if r < vs {
                        y[t * d * s..(t + 1) * d * s]
                            .copy_from_slice(&o[0].dtype.encode_f32(&table[r * d..(r + 1) * d]));
                    }
                }
                self.write(o[0], &y)
            }
            Op::RmsNorm { eps, unit_offset } => {
                let d = i[1].shape[0];
                let y = rms_norm(&self.f32s(i[0])?, &self.f32s(i[1])?, d, *eps, *unit_offset);
                self.put(o[0], &y)
            }
            Op::AddRmsNorm { eps, unit_offset } => {
                // the composition: add (rounded to sum's dtype), then rms_norm of what was stored
                let sum = add(&self.f32s(i[0])?, &self.f32s(i[1])?);
                self.put(o[0], &sum)?;
                let stored = self.f32s(o[0])?;
                let d = i[2].shape[0];
                self.put(o[1], &rms_norm(&stored, &self.f32s(i[2])?, d, *eps, *unit_offset))
            }
            Op::AddRmsNormLinear {
                eps,
                unit_offset,
                swiglu: pairs,
            } => {
                // the composition: add_rms_norm (the sum rounded as stored, normed rows in f32),
                // then linear (then swiglu over its output pairs)
                let sum = add(&self.f32s(i[0])?, &self.f32s(i[1])?);
                self.put(o[0], &sum)?;
                let stored = self.f32s(o[0])?;
                let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[3].shape[0]);
                let h = rms_norm(&stored, &self.f32s(i[2])?, k, *eps, *unit_offset);
                let y = linear(&h, &self.f32s(i[3])?, m, k, n);
                if *pairs {
                    let (g, u): (Vec<f32>, Vec<f32>) = y.chunks(2).map(|p| (p[0], p[1])).unzip();
                    return self.put(o[1], &swiglu(&g, &u));
                }
                self.put(o[1], &y)
            }
            Op::LinearAdd => {
                // the composition: linear (f32), then add to a (rounded to y's dtype)
                let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
                let y = linear(&self.f32s(i[0])?, &self.f32s(i[1])?, m, k, n);
                self.put(o[0], &add(&self.f32s(i[2])?, &y))
            }
            Op::RmsNormLinear {
                eps,
                unit_offset,
                swiglu: pairs,
            } => {
                // the composition: rms_norm (normed rows in f32), then linear (then swiglu over
                // its output pairs)
                let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[2].shape[0]);
                let h = rms_norm(&self.f32s(i[0])?, &self.f32s(i[1])?, k, *eps, *unit_offset);
                let y = linear(&h, &self.f32s(i[2])?, m, k, n);
                if *pairs {
                    let (g, u): (Vec<f32>, Vec<f32>) = y.chunks(2).map(|p| (p[0], p[1])).unzip();
                    return self.put(o[0], &swiglu(&g, &u));
                }
                self.put(o[0], &y)
            }
            Op::LinearAddRmsNorm { eps, unit_offset } => {
                // the composition: linear (stored in y's dtype), then add_rms_norm of a and y as
                // stored
                let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
                self.put(o[0], &linear(&self.f32s(i[0])?, &self.f32s(i[1])?, m, k, n))?;
                let sum = add(&self.f32s(i[2])?, &self.f32s(o[0])?);
                self.put(o[1], &sum)?;
                let stored = self.f32s(o[1])?;
                self.put(o[2], &rms_norm(&stored, &self.f32s(i[3])?, n, *eps, *unit_offset))
            }
            Op::RmsNormRope { eps, rotary_dim } => {
                let s = &i[0].shape;
                let y = self.norm_rope(&self.f32s(i[0])?, [s[0], s[1], s[2]], &i[1..5], *eps, *rotary_dim)?;
                self.put(o[0], &y)
            }
            Op::RmsNormRopeKv { eps, rotary_dim } => {
                // the composition: RmsNormRope of the q and k heads, then KvWrite of k and v
                let (t, hq, dh) = (o[0].shape[0], o[0].shape[1], o[0].shape[2]);
                let hkv = o[1].shape[2];
                let x = self.f32s(i[0])?;
                let per = (hq + 2 * hkv) * dh;
                let head = |lo: usize, hi: usize| -> Vec<f32> {
                    x.chunks(per).flat_map(|r| r[lo * dh..hi * dh].to_vec()).collect()
                };
                let y = self.norm_rope(&head(0, hq + hkv), [t, hq + hkv, dh], &i[1..5], *eps, *rotary_dim)?;
                let qk = y.chunks((hq + hkv) * dh);
                let q: Vec<f32> = qk.clone().flat_map(|r| r[..hq * dh].to_vec()).collect();
                let k: Vec<f32> = qk.flat_map(|r| r[hq * dh..].to_vec()).collect();
                self.put(o[0], &q)?;
                let (rows, row) = (o[1].shape[0] * o[1].shape[1], hkv * dh);
                let slots = self.u32s(i[5])?;
                crate::op::check_slots(op.name(), &slots, rows)?;
                for (x, pool) in [(k, o[1]), (head(hq + hkv, hq + 2 * hkv), o[2])] {
                    self.with_bytes_mut(pool, |bytes| kv_write(bytes, pool.dtype, row, &x, &slots))?;
                }
                Ok(())
            }
            Op::LinearRmsNormRopeKv { eps, rotary_dim } => {
                // the composition itself: the projection into f32 rows, then rms_norm_rope_kv
                let (t, n) = (i[0].shape[0], i[1].shape[0]);
                let (heads, dh) = (o[0].shape[1] + 2 * o[1].shape[2], o[0].shape[2]);
                let y = self.alloc(DType::F32, &[t, heads, dh])?;
                self.run(&Op::Linear, &i[..2], &[&y.reshape(&[t, n])?])?;
                let kv = Op::RmsNormRopeKv {
                    eps: *eps,
                    rotary_dim: *rotary_dim,
                };
                self.run(&kv, &[&y, i[2], i[3], i[4], i[5], i[6]], o)
            }
            Op::RmsNormRopeKvAttention { .. } => {
                // the composition itself: q (f32) from rms_norm_rope_kv, then paged_attention
                let (kv, att) = op.rope_kv_attention_parts().expect("the fused op");
                let q = self.alloc(DType::F32, &o[0].shape)?;
                self.run(&kv, &i[..6], &[&q, o[1], o[2]])?;
                self.run(&att, &[&q, o[1], o[2], i[6], i[7]], &[o[0]])
            }
            Op::Linear => {
                let (m, k, n) = (i[0].shape[0], i[0].shape[1], i[1].shape[0]);
                let y = linear(&self.f32s(i[0])?, &self.f32s(i[1])?, m, k, n);
                self.put(o[0], &y)
            }
            Op::SwiGluLinear => {
                // the composition: swiglu over the (gate, up) pairs in f32, then linear
                let (m, k, n) = (i[0].shape[0], i[1].shape[1], i[1].shape[0]);
                let x = self.f32s(i[0])?;
                let (g, u): (Vec<f32>, Vec<f32>) = x.chunks(2).map(|p| (p[0], p[1])).unzip();
                let y = linear(&swiglu(&g, &u), &self.f32s(i[1])?, m, k, n);
                self.put(o[0], &y)
            }
            Op::LinearSwiGlu => {
                // the composition: linear into (gate, up) pairs in f32, then swiglu over them
                let (m, k, n2) = (i[0].shape[0], i[1].shape[1], i[1].shape[0]);
                let y = linear(&self.f32s(i[0])?, &self.f32s(i[1])?, m, k, n2);
                let (g, u): (Vec<f32>, Vec<f32>) = y.chunks(2).map(|p| (p[0], p[1])).unzip();
                self.put(o[0], &swiglu(&g, &u))
            }
            Op::Rope { rotary_dim } => {
                let s = &i[0].shape;
                let y = rope(
                    &self.f32s(i[0])?,
                    &self.u32s(i[1])?,
                    &self.f32s(i[2])?,
                    &self.f32s(i[3])?,
                    s[0],
                    s[1],
                    s[2],
                    *rotary_dim,
                )?;
                self.put(o[0], &y)
            }
            Op::Attention { n_past, scale } => {
                let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2]);
                let hkv = i[1].shape[1];
                let y = attention(
                    &self.f32s(i[0])?,
                    &self.f32s(i[1])?,
                    &self.f32s(i[2])?,
                    t,
                    hq,
                    hkv,
                    dh,
                    *n_past,
                    *scale,
                );
                self.put(o[0], &y)
            }
            Op::SwiGlu if i.len() == 1 => {
                let x = self.f32s(i[0])?;
                let (g, u): (Vec<f32>, Vec<f32>) = x.chunks(2).map(|p| (p[0], p[1])).unzip();
                self.put(o[0], &swiglu(&g, &u))
            }
            Op::SwiGlu => self.put(o[0], &swiglu(&self.f32s(i[0])?, &self.f32s(i[1])?)),
            Op::Add => self.put(o[0], &add(&self.f32s(i[0])?, &self.f32s(i[1])?)),
            Op::Softmax => self.put(o[0], &softmax(&self.f32s(i[0])?, i[0].shape[1])),
            Op::Argmax => self.put_u32(o[0], &argmax(&self.f32s(i[0])?, i[0].shape[1])),
            Op::TopK { k } => {
                let (vals, idx) = topk(&self.f32s(i[0])?, i[0].shape[1], *k);
                self.put(o[0], &vals)?;
                self.put_u32(o[1], &idx)
            }
            Op::Copy => {
                let b = self.read(i[0])?;
                self.write(o[0], &b)
            }
            Op::Cast => self.put(o[0], &self.f32s(i[0])?),
            Op::CausalConv1d | Op::CausalConv1dUpdate => {
                let (t, c, k) = (i[0].shape[0], i[0].shape[1], i[1].shape[1]);
                let (y, st) = causal_conv1d(&self.f32s(i[0])?, &self.f32s(i[1])?, &self.f32s(i[2])?, t, c, k);
                self.put(o[0], &y)?;
                self.put(o[1], &st)
            }
            // the recurrence is the definition: the reference for the chunked op too
            Op::GdnRecurrent | Op::GdnChunked => {
                let (t, nk, nv, dk, dv) =
                    crate::op::gdn_dims(&i[0].shape, &i[5].shape).map_err(|e| Error::shape(op.name(), e))?;
                let f = |k: usize| self.f32s(i[k]);
                let (y, st) = gdn_recurrent(
                    &f(0)?,
                    &f(1)?,
                    &f(2)?,
                    &f(3)?,
                    &f(4)?,
                    &f(5)?,
                    GdnDims { t, nk, nv, dk, dv },
                );
                self.put(o[0], &y)?;
                self.put(o[1], &st)
            }
            Op::RmsNormGated { eps } => {
                let d = i[2].shape[0];
                self.put(
                    o[0],
                    &rms_norm_gated(&self.f32s(i[0])?, &self.f32s(i[1])?, &self.f32s(i[2])?, d, *eps),
                )
            }
            Op::GatedAttention {
                n_past,
                scale,
                eps,
                rotary_dim,
            } => {
                let (t, hq, dh) = (i[0].shape[0], i[0].shape[1], i[0].shape[2] / 2);
                let hkv = i[1].shape[1];
                let d = GatedAttentionDims {
                    t,
                    hq,
                    hkv,
                    dh,
                    rot: *rotary_dim,
                    n_past: *n_past,
                };
                let (q, gate) = split_q_gate(&self.f32s(i[0])?, t, hq, dh);
                let (q, k) = qk_preamble(
                    &q,
                    &self.f32s(i[1])?,
                    &self.f32s(i[3])?,
                    &self.f32s(i[4])?,
                    &self.f32s(i[5])?,
                    &self.f32s(i[6])?,
                    d,
                    *eps,
                )?;
                // k and v land in the cache rows n_past..n_past+T (in the cache's dtype); attention
                // then reads the cache as stored
                let rows = t * hkv * dh;
                self.put(&o[1].view(n_past * hkv * dh, &[rows])?, &k)?;
                self.put(&o[2].view(n_past * hkv * dh, &[rows])?, &self.f32s(i[2])?)?;
                let y = gated_attention(&q, &gate, &self.f32s(o[1])?, &self.f32s(o[2])?, d, *scale);
                self.put(o[0], &y)
            }
            Op::KvWrite => {
                let (rows, row) = (o[0].shape[0] * o[0].shape[1], o[0].shape[2] * o[0].shape[3]);
                let slots = self.u32s(i[2])?;
                crate::op::check_slots(op.name(), &slots, rows)?;
                for (x, pool) in [(i[0], o[0]), (i[1], o[1])] {
                    let x = self.f32s(x)?;
                    self.with_bytes_mut(pool, |bytes| kv_write(bytes, pool.dtype, row, &x, &slots))?;
                }
                Ok(())
            }
            Op::PagedAttention { scale, .. } => {
                let (d, tables, seqs) = self.paged_batch(op, i[0], i[1], i[3], i[4])?;
                let (k, renum) = self.read_blocks(i[1], &tables, &seqs, d)?;
                let (v, _) = self.read_blocks(i[2], &tables, &seqs, d)?;
                let y = paged_attention(&self.f32s(i[0])?, &k, &v, &renum, &seqs, d, *scale);
                self.put(o[0], &y)
            }
            Op::PagedGatedAttention {
                scale, eps, rotary_dim, ..
            } => {
                let (d, tables, seqs) = self.paged_batch(op, i[0], o[1], i[7], i[8])?;
                let t = i[0].shape[0];
                let (q, gate) = split_q_gate(&self.f32s(i[0])?, t, d.hq, d.dh);
                let (pos, slots) = positions_and_slots(&tables, &seqs, d);
                let f = |k: usize| self.f32s(i[k]);
                let (q, k) = paged_qk_preamble(&q, &f(1)?, &f(3)?, &f(4)?, &f(5)?, &f(6)?, &pos, d, *eps, *rotary_dim)?;
                // k and v into the pools (rounded to their dtype); attention reads them as stored
                crate::op::check_slots(op.name(), &slots, o[1].shape[0] * d.bs)?;
                for (x, pool) in [(k, o[1]), (f(2)?, o[2])] {
                    self.with_bytes_mut(pool, |bytes| kv_write(bytes, pool.dtype, d.hkv * d.dh, &x, &slots))?;
                }
                let (kb, renum) = self.read_blocks(o[1], &tables, &seqs, d)?;
                let (vb, _) = self.read_blocks(o[2], &tables, &seqs, d)?;
                let y = paged_attention(&q, &kb, &vb, &renum, &seqs, d, *scale);
                self.put(o[0], &apply_gate(&y, &gate))
            }
            Op::Penalties => {
                let v = i[0].shape[1];
                let y = penalties(&self.f32s(i[0])?, &self.u32s(i[1])?, &self.f32s(i[2])?, v);
                self.put(o[0], &y)
            }
            Op::MinP => self.put(o[0], &min_p(&self.f32s(i[0])?, &self.f32s(i[1])?, i[0].shape[1])),
            // per sequence, the single-sequence reference over its rows and its slot
            Op::CausalConv1dBatch => {
                let (t, c, k) = (i[0].shape[0], i[0].shape[1], i[1].shape[1]);
                let seqs = crate::op::check_state_batch(op.name(), t, o[1].shape[0], &self.u32s(i[2])?)?;
                let mut pool = self.f32s(o[1])?;
                let y = causal_conv1d_batch(&self.f32s(i[0])?, &self.f32s(i[1])?, &mut pool, &seqs, c, k);
                self.put(o[0], &y)?;
                self.put(o[1], &pool)
            }
            Op::GdnBatch => {
                let p = &o[1].shape;
                let (t, nk, nv, dk, dv) =
                    crate::op::gdn_dims(&i[0].shape, &p[1..]).map_err(|e| Error::shape(op.name(), e))?;
                let seqs = crate::op::check_state_batch(op.name(), t, p[0], &self.u32s(i[5])?)?;
                let f = |k: usize| self.f32s(i[k]);
                let mut pool = self.f32s(o[1])?;
                let y = gdn_batch(
                    &f(0)?,
                    &f(1)?,
                    &f(2)?,
                    &f(3)?,
                    &f(4)?,
                    &mut pool,
                    &seqs,
                    GdnDims { t, nk, nv, dk, dv },
                );
                self.put(o[0], &y)?;
                self.put(o[1], &pool)
            }
            Op::GdnConvNorm { .. } => {
                // the composition itself, u and o (f32) between its ops
                let u = self.alloc(DType::F32, &i[0].shape)?;
                let core = self.alloc(DType::F32, &o[0].shape)?;
                for (op, ins, outs) in crate::op::gdn_conv_norm_wiring(op, i, o, &u, &core) {
                    self.run(&op, &ins, &outs)?;
                }
                Ok(())
            }
            Op::Sample { k } => {
                let (ids, lps) = sample(&self.f32s(i[0])?, &self.f32s(i[1])?, i[0].shape[1], *k);
                self.put_u32(o[0], &ids)?;
                self.put(o[1], &lps)
            }
        }
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }
}

impl CpuBackend {
    /// RmsNormRope's reference: x [T, H, Dh] (f32) with w, pos, cos, sin (`ins`), the composition
    /// of the two reference ops in f32 between them.
    fn norm_rope(&self, x: &[f32], [t, h, d]: [usize; 3], ins: &[&Tensor], eps: f32, rot: usize) -> Result<Vec<f32>> {
        let w = self.f32s(ins[0])?;
        let normed = if ins[0].shape.len() == 2 {
            // a weight row a head: each head row normed with its own
            let rows = x.chunks(d).enumerate();
            rows.flat_map(|(r, row)| rms_norm(row, &w[(r % h) * d..][..d], d, eps, false))
                .collect()
        } else {
            rms_norm(x, &w, d, eps, false)
        };
        let (pos, cos, sin) = (self.u32s(ins[1])?, self.f32s(ins[2])?, self.f32s(ins[3])?);
        rope(&normed, &pos, &cos, &sin, t, h, d, rot)
    }
}
