//! Serving many requests at once: the host-side half. Pure bookkeeping, no device code: it decides
//! which tokens of which requests run in each step and where their K and V live; the engine runs
//! those plans on a device.
//!
//! Layers (each talks only to the one below):
//! `Scheduler` (scheduler.rs: requests, continuous batching, preemption, finish reasons, stats)
//! -> `PrefixCache` (prefix_cache.rs: full blocks by a 128-bit hash chain, shared read-only, LRU
//! eviction of idle ones) -> `BlockPool` (block_pool.rs: free list and reference counts; the block
//! geometry and the `--kv-memory` / `--kv-dtype` flags).
//!
//! # The engine's side of the contract
//!
//! Setup: `KvGeometry::from_config(cfg, parse_kv_dtype(flag)?, block_size)` gives the bytes of a
//! block; `KvMemory::parse(flag)?.resolve(available)` the byte budget; `geometry.num_blocks(budget)`
//! the pool size. The engine allocates, per KV layer, a K and a V pool of `num_blocks * block_size`
//! token slots (`[slot, kv_heads, head_dim]`); unused slots may hold anything (NaN included): the
//! scheduler never plans a read of a slot no token of that sequence was written to.
//! `Scheduler::new(SchedulerConfig::for_model(cfg, num_blocks))`.
//!
//! Each iteration, on the engine's thread:
//! 1. `add` new requests (a refusal comes back with its `RefuseReason`) and `abort` cancelled ones
//!    (their blocks are released at once; allowed while a step is in flight: that step still
//!    writes into the aborted request's blocks, which is harmless because no block is handed out
//!    again before the next `schedule`, and `commit` skips the request).
//! 2. `schedule()` returns a `StepPlan` (possibly empty when nothing runs). For each `PlannedSeq`:
//!    feed `tokens` at `positions`; write each token's K and V to pool slot `slots[i]`
//!    (`block * block_size + offset`) of every KV layer; attend, for a token at position p, to
//!    positions `0..=p` of its sequence through `block_table` (position q lives in slot
//!    `block_table[q / block_size] * block_size + q % block_size`). Blocks in a block table may be
//!    shared with other sequences (prefix cache): they are read-only, and the plan never places a
//!    write into them. `StepPlan::{token_ids, positions, slots, query_starts, sample_rows}` give the
//!    flat batch as the device buffers want it.
//! 3. Where `sample` is set, sample a token from the chunk's last row with `sampling` (the
//!    request's parameters, opaque to the scheduler; `generated` is the index of the token being
//!    sampled, for a per-request counter-based random stream, so preemption and batching do not
//!    change a seeded request's output).
//! 4. `commit(&StepResult { sampled: [(id, token)] })` returns the `TokenEvent`s to stream (the
//!    last one of a request carries its `FinishReason`: stop, eos or length). `schedule` needs
//!    every planned step committed (else `ServeError::Protocol`). To overlap steps, the engine may
//!    call `schedule_ahead()` while one step is in flight: in the steady state (every running
//!    sequence sampled in that step, nobody waiting, blocks free) it plans each running
//!    sequence's next decode with the token id still unknown (`PENDING_TOKEN`: the engine feeds
//!    the id the step in flight picks, on the device). Commits come in plan order; a sequence
//!    that stopped in the first step has its ahead token dropped.
//!
//! `stats()`: running, waiting, blocks used / idle-cached / free, prefix-cache hits, misses,
//! evictions and hit rate, preemptions.
//!
//! Hybrid models (Qwen3.5): the Gated DeltaNet layers keep per-sequence conv and recurrent state.
//! Each running sequence has a `state_slot` in 0..max_seqs, fixed while it runs; a chunk whose
//! first position is 0 starts the sequence afresh (the engine zeroes that slot's state), a later
//! chunk continues the state the previous chunk left. A shared KV block cannot restore the
//! recurrent state at its boundary, so prefix caching is off for these models
//! (`SchedulerConfig::for_model`), and asking for it is refused by name
//! (`ServeError::PrefixCacheUnsupported`). A preempted sequence is recomputed from position 0, which
//! rebuilds its state as well.
//!
//! Preemption: when the blocks run out, the newest running sequence gives all of its blocks back
//! and goes to the head of the waiting queue; it is later recomputed from its prompt + the tokens
//! it had generated (which are kept: it continues where it was). The oldest running sequence is
//! never preempted for a younger one, and `add` refuses a request that would not fit the whole pool
//! alone, so the oldest always finishes: no livelock.
pub mod block_pool;
mod check;
pub mod engine;
pub mod plan;
pub mod prefix_cache;
pub mod request;
pub mod scheduler;
#[cfg(test)]
mod scheduler_tests;
#[cfg(test)]
mod sim_tests;

pub use block_pool::{parse_kv_dtype, BlockId, BlockPool, KvGeometry, KvMemory, KvMemoryError, DEFAULT_BLOCK_SIZE};
pub use engine::{Event, ServeEngine, ServeOptions};
pub use plan::{PlannedSeq, StepPlan, StepResult};
pub use prefix_cache::{BlockKey, PrefixCache};
pub use request::{FinishReason, RefuseReason, Request, RequestId, SamplingParams, Stats, TokenEvent};
pub use scheduler::{Scheduler, SchedulerConfig, DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_SEQS, PENDING_TOKEN};

/// Everything the serving layer refuses, by name.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    KvMemory(#[from] KvMemoryError),
    #[error("--kv-dtype {0}: the KV cache is held in f16, bf16 or f32")]
    KvDtype(String),
    #[error("--kv-memory: {budget} bytes hold no KV block of {block_bytes} bytes")]
    KvTooSmall { budget: u64, block_bytes: u64 },
    #[error("scheduler config: {field}: {reason}")]
    Config { field: &'static str, reason: String },
    #[error(
        "prefix caching is not supported for {model}: its linear-attention layers keep per-sequence \
         recurrent state that a shared KV block cannot restore (run without prefix caching)"
    )]
    PrefixCacheUnsupported { model: String },
    #[error("request {id} refused: {reason}")]
    Refused { id: RequestId, reason: RefuseReason },
    /// the engine broke the schedule/commit protocol
    #[error("{0}")]
    Protocol(String),
}

impl From<ServeError> for crate::Error {
    fn from(e: ServeError) -> Self {
        crate::Error::Other(e.to_string())
    }
}
