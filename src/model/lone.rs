//! One sequence through the families' batched forward (`qwen3::forward_paged`,
//! `qwen3_5::forward_paged`): a batch of one over KV pools of its own, for what works on one
//! sequence at a time (`Engine::forward`: the model gates' teacher forcing and hidden states,
//! `bench --decode/--prefill`, chat and sampling with penalties). There is no other cache: a lone
//! sequence is the serving engine's batch of one, with its blocks in position order.
//!
//! Its pool holds `capacity` tokens in blocks (`block_for`) taken in order, so block table entry i is
//! block i and a token's pool row (its slot) is its position: positions, slots and the sampled
//! row come from one iota buffer [capacity] u32 as views, and a step uploads only its sequence's
//! descriptor (first row, count, kv length; and the hybrid state's).
use super::arch::Weights;
use super::config::Config;
use super::paged::{Batch, BatchWorkspace, KvPools};
use super::{qwen3, qwen3_5, Logits};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The block size of a lone sequence's pool of `capacity` tokens: the serving engine's default
/// (16), so that a lone sequence records the kernels a served one does, or the largest power of two
/// dividing the capacity where 16 does not: the hybrid family's paged attention refuses block
/// tables that reach past the RoPE table (sized to the context).
pub fn block_for(capacity: usize) -> usize {
    1 << capacity
        .trailing_zeros()
        .min(crate::serve::DEFAULT_BLOCK_SIZE.trailing_zeros())
}

/// Called after the embedding (i = 0) and after each decoder layer (i = layer + 1) with the
/// residual stream [T, D] of the step's tokens.
pub type Hidden<'a> = &'a mut dyn FnMut(usize, &dyn Backend, &Tensor) -> Result<()>;

/// A lone sequence's state: a K/V pool pair per attention layer (f32), and for a hybrid model one
/// state slot of its linear layers.
pub struct Cache {
    pools: KvPools,
    state: Option<qwen3_5::HybridState>,
    /// 0, 1, .. capacity-1: positions, slots, the block table and the sampled rows as views
    iota: Tensor,
    /// [1, 3]: first row, count, kv length
    seq: Tensor,
    /// [1, STATE_SEQ_FIELDS]: the hybrid state's descriptor
    state_seq: Tensor,
    block: usize,
    pub len: usize,
    pub capacity: usize,
}

impl Cache {
    pub fn new(c: &Config, dev: &dyn Backend, capacity: usize) -> Result<Cache> {
        let block = block_for(capacity);
        let blocks = capacity.div_ceil(block).max(1);
        let (pools, state) = match &c.hybrid {
            None => (KvPools::new(c, dev, blocks, block, DType::F32)?, None),
            Some(_) => (
                qwen3_5::kv_pools(c, dev, blocks, block, DType::F32)?,
                Some(qwen3_5::HybridState::new(c, dev, 1)?),
            ),
        };
        let n = (blocks * block) as u32;
        let iota = dev.alloc(DType::U32, &[n as usize])?;
        dev.upload(&iota, &(0..n).flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>())?;
        Ok(Cache {
            pools,
            state,
            iota,
            seq: dev.alloc(DType::U32, &[1, 3])?,
            state_seq: dev.alloc(DType::U32, &[1, crate::op::STATE_SEQ_FIELDS])?,
            block,
            len: 0,
            capacity,
        })
    }
    /// Tokens seen.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

/// Scratch of a lone step of T tokens: the family's batch workspace (for T tokens and the rows
/// `Logits` asks) and the token-id upload slot.
pub struct Workspace {
    pub t: usize,
    /// [T] u32
    pub ids: Tensor,
    family: Family,
}

#[allow(clippy::large_enum_variant)]
enum Family {
    Dense(BatchWorkspace),
    Hybrid(qwen3_5::HybridWorkspace),
}

/// The sampled rows a `Logits` asks for over T tokens.
pub fn rows_of(which: &Logits, t: usize) -> usize {
    match which {
        Logits::Last => 1,
        Logits::All => t,
    }
}

impl Workspace {
    /// A workspace for T tokens leaving `rows` logits rows (1, or T for `Logits::All`).
    pub fn new(c: &Config, dev: &dyn Backend, t: usize, rows: usize) -> Result<Workspace> {
        let family = match &c.hybrid {
            None => Family::Dense(BatchWorkspace::new(c, dev, t, rows)?),
            Some(_) => Family::Hybrid(qwen3_5::HybridWorkspace::new(c, dev, t, rows)?),
        };
        Ok(Workspace {
            t,
            ids: dev.alloc(DType::U32, &[t])?,
            family,
        })
    }
    /// Logits [rows, V] (f32) of the last forward.
    pub fn logits(&self) -> &Tensor {
        match &self.family {
            Family::Dense(w) => &w.logits,
            Family::Hybrid(w) => &w.logits,
        }
    }
    /// The argmax output (u32; its first element for a lone step).
    pub fn next(&self) -> &Tensor {
        match &self.family {
            Family::Dense(w) => &w.next,
            Family::Hybrid(w) => &w.next,
        }
    }
}

/// Records a forward of `ws.t` tokens (ids in `ids`, [T] u32: the upload slot, or the previous
/// step's argmax on the device) at positions cache.len.., K/V into the cache's pools, and the
/// logits `which` asks into `ws.logits()`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    w: &Weights,
    ws: &Workspace,
    cache: &mut Cache,
    ids: &Tensor,
    which: Logits,
    c: &Config,
    dev: &dyn Backend,
    hidden: Hidden,
) -> Result<()> {
    let (t, n_past) = (ws.t, cache.len);
    if n_past + t > cache.capacity {
        return Err(Error::Other(format!(
            "context full: {n_past} + {t} tokens exceed the context of {}",
            cache.capacity
        )));
    }
    let r = rows_of(&which, t);
    let kv = n_past + t;
    let iota = |at: usize, n: usize| cache.iota.view(at, &[n]);
    let mb = kv.div_ceil(cache.block);
    let batch = Batch {
        t,
        s: 1,
        r,
        ids: ids.view(0, &[t])?,
        positions: iota(n_past, t)?,
        // the pool's blocks are in position order: a token's slot is its position
        slots: iota(n_past, t)?,
        block_tables: cache.iota.view(0, &[1, mb])?,
        seqs: cache.seq.clone(),
        sample_rows: iota(t - r, r)?,
    };
    let words = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    dev.upload(&cache.seq, &words(&[0, t as u32, kv as u32]))?;
    match (w, &ws.family, &cache.state) {
        (Weights::Qwen3(w), Family::Dense(bw), None) => {
            qwen3::forward_paged(w, bw, &cache.pools, &batch, c, dev, hidden)?
        }
        (Weights::Qwen3_5(w), Family::Hybrid(hw), Some(state)) => {
            // slot 0; a chunk at position 0 starts the state afresh
            dev.upload(&cache.state_seq, &words(&[0, t as u32, 0, (n_past == 0) as u32]))?;
            qwen3_5::forward_paged(w, hw, &cache.pools, state, &batch, &cache.state_seq, c, dev, hidden)?
        }
        _ => {
            return Err(Error::Other(
                "forward: the weights, workspace and cache belong to different model families".into(),
            ))
        }
    }
    cache.len = kv;
    Ok(())
}
