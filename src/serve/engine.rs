//! The serving engine: a loaded model, its paged KV pools and the scheduler. `step` runs one
//! scheduled batch on the device: the plan's tokens, positions, slots, block tables and sequence
//! descriptors go up, the family's batched forward is recorded over them, every sampled row's token
//! is picked on the device by one `Op::Sample` (greedy or sampled, per-row parameters and the
//! row's uniform u drawn on the host from the request's seed and the token's index) and read back
//! with its logprob and alternatives in one download, and the tokens go back to the scheduler.
//! A device that refuses `Op::Sample` gets argmax plus the host sampler (the same arithmetic).
//!
//! Batch invariance: every op of the batched forward computes a row from that row alone in an order
//! that does not depend on the batch (linear: the matvec for every M; attention: one workgroup per
//! query row walking its keys from key 0), and a sampled token depends only on its row, the request's
//! seed and the token's index. So a request's tokens are the same alone or among others, whatever
//! its prompt's chunking, preempted or not.
use super::{
    parse_kv_dtype, FinishReason, KvGeometry, KvMemory, Request, RequestId, Scheduler, SchedulerConfig, ServeError,
    Stats, StepPlan, StepResult, DEFAULT_BLOCK_SIZE, DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_SEQS,
};
use crate::backend::{BatchInvariance, Capability, Support};
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::model::arch::Weights;
use crate::model::paged::{Batch, BatchWorkspace, KvPools};
use crate::model::qwen3;
use crate::model::qwen3_5::paged::{self as hybrid, HybridState, HybridWorkspace};
use crate::op::{Op, OpDesc, TensorDesc, MAX_TOP_LOGPROBS};
use crate::tensor::Tensor;
use std::collections::HashMap;

/// How the engine sizes its KV pools and batches (the `--kv-*`, `--max-*` flags).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub kv_dtype: DType,
    /// the byte budget of the pools; capped at what `max_seqs` full-length sequences need
    pub kv_memory: KvMemory,
    pub block_size: usize,
    pub max_seqs: usize,
    pub max_batch_tokens: usize,
    /// None: the model's default (on, off for hybrid models)
    pub prefix_caching: Option<bool>,
    /// The family of kernels every step runs (batch invariance holds within one family, never
    /// across two); None: by `max_seqs` (`MANY_ROWS_FROM_SEQS`). `Off` (the single-stream kernels)
    /// is honoured only with `max_seqs` 1, as `wgllm run` sets it.
    pub kernels: Option<BatchInvariance>,
}

/// The default KV budget when `--kv-memory` is not given: 2 GiB.
pub const DEFAULT_KV_MEMORY: u64 = 2 << 30;

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            kv_dtype: DType::F16,
            kv_memory: KvMemory::Bytes(DEFAULT_KV_MEMORY),
            block_size: DEFAULT_BLOCK_SIZE,
            max_seqs: DEFAULT_MAX_SEQS,
            max_batch_tokens: DEFAULT_MAX_BATCH_TOKENS,
            prefix_caching: None,
            kernels: None,
        }
    }
}

/// From this many sequences a step (`max_seqs`) on, the engine's kernels are the ones built for many
/// rows (`BatchInvariance::ManyRows`: tensor-core tiles where the device has them; on an H200 an
/// 8-sequence step 3.0 ms against single-stream decode's kernels' 3.6, a lone sequence's about
/// 2.9 against 2.0-2.2); below it, those of single-stream decode.
pub const MANY_ROWS_FROM_SEQS: usize = 8;

impl ServeOptions {
    /// The batch invariance the engine runs under: one family of kernels for every step, so a
    /// sequence's bits do not depend on what else is in its steps.
    pub fn invariance(&self) -> BatchInvariance {
        // Off (each linear's kernel by its own M: the single-stream path's) only where a step never
        // holds a second sequence
        if let Some(k) = self
            .kernels
            .filter(|&k| k != BatchInvariance::Off || self.max_seqs == 1)
        {
            return k;
        }
        if self.max_seqs >= MANY_ROWS_FROM_SEQS {
            BatchInvariance::ManyRows
        } else {
            BatchInvariance::FewRows
        }
    }

    /// `--kv-dtype` as the flag gives it.
    pub fn with_kv_dtype(mut self, s: &str) -> std::result::Result<Self, ServeError> {
        self.kv_dtype = parse_kv_dtype(s)?;
        Ok(self)
    }
}

/// A token a request received, with its logprob and alternatives when the request asked for them;
/// `finish` is set on the request's last event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: RequestId,
    pub token: u32,
    pub logprob: Option<f64>,
    pub top: Vec<(u32, f64)>,
    pub finish: Option<FinishReason>,
}

/// The device buffers a step's plan is uploaded into, sized for the largest step.
struct PlanBuffers {
    ids: Tensor,
    positions: Tensor,
    slots: Tensor,
    block_tables: Tensor,
    seqs: Tensor,
    sample_rows: Tensor,
    /// `Op::Sample`'s params rows [max_seqs, 4]
    sample_params: Tensor,
    /// two picks buffers, used in turn: `Op::Sample`'s ids [R, 1 + K] then its logprobs
    /// [R, 1 + K] (as f32), read back at once
    picked: [Tensor; 2],
    /// block-table columns the buffer holds per sequence
    max_blocks: usize,
}

/// What the family's batched forward needs besides the pools: the dense family's workspace, or the
/// hybrid family's workspace, recurrent-state slots and per-step state descriptor [max_seqs, 4].
enum Family {
    Dense(BatchWorkspace),
    Hybrid {
        ws: HybridWorkspace,
        state: HybridState,
        state_seqs: Tensor,
    },
}

impl Family {
    fn logits_and_next(&self) -> (&Tensor, &Tensor) {
        match self {
            Family::Dense(ws) => (&ws.logits, &ws.next),
            Family::Hybrid { ws, .. } => (&ws.logits, &ws.next),
        }
    }
}

/// A step submitted and not yet committed.
struct Flight {
    plan: StepPlan,
    /// alternatives asked (`Op::Sample`'s K)
    k: usize,
    /// the picks buffer its `Op::Sample` writes
    picked: usize,
    read: Pick,
}

/// `Op::KvWrite` into pools of `num_blocks` blocks: the op that binds a whole pool.
fn kv_write_desc(c: &crate::model::config::Config, num_blocks: usize, opts: &ServeOptions) -> OpDesc {
    let (hkv, dh) = (c.num_key_value_heads, c.head_dim);
    let pool = TensorDesc::new(opts.kv_dtype, &[num_blocks, opts.block_size, hkv, dh]);
    OpDesc::new(
        Op::KvWrite,
        vec![
            TensorDesc::new(DType::F32, &[1, hkv, dh]),
            TensorDesc::new(DType::F32, &[1, hkv, dh]),
            TensorDesc::new(DType::U32, &[1]),
        ],
        vec![pool.clone(), pool],
    )
}

/// The most blocks (up to `want`) a layer's pool can have on `dev`: a device binds a buffer of
/// limited size (wgpu's max_storage_buffer_binding_size), so a large `--kv-memory` is capped at
/// load time instead of failing at the first request.
fn fit_pool(
    dev: &dyn crate::backend::Backend,
    c: &crate::model::config::Config,
    want: usize,
    opts: &ServeOptions,
) -> Result<usize> {
    let fits = |nb: usize| dev.supports(&kv_write_desc(c, nb, opts));
    let reason = match fits(want) {
        Support::Yes => return Ok(want),
        Support::No(r) => r,
    };
    if let Support::No(r) = fits(1) {
        return Err(Error::Other(format!(
            "--kv-memory: {} cannot hold even one KV block of {} tokens: {r}",
            dev.name(),
            opts.block_size
        )));
    }
    let (mut lo, mut hi) = (1, want);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid).is_yes() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    log::warn!(
        "the KV pool is capped at {lo} blocks a layer (of {want} for --kv-memory) on {}: {reason}",
        dev.name()
    );
    Ok(lo)
}

pub struct ServeEngine {
    /// steps submitted, oldest first (two while pipelined); declared first, so dropped first
    flights: std::collections::VecDeque<Flight>,
    pub engine: Engine,
    sched: Scheduler,
    pools: KvPools,
    family: Family,
    bufs: PlanBuffers,
    /// the picks buffer the next non-ahead step writes
    next_picked: usize,
    /// steps overlap (see `step`)
    pipelined: bool,
    /// the requests of a step that failed before it was submitted (`recover` aborts them)
    unlaunched: Vec<RequestId>,
    steps: u64,
    tokens_fed: u64,
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl ServeEngine {
    /// The serving engine over a loaded model. Refuses a family without a batched forward by name.
    pub fn new(engine: Engine, opts: &ServeOptions) -> Result<ServeEngine> {
        engine.dev.set_batch_invariant(opts.invariance());
        let c = &engine.cfg;
        let geo = KvGeometry::from_config(c, opts.kv_dtype, opts.block_size)?;
        let max_len = engine.max_ctx;
        let need = geo.bytes_per_token() * (opts.max_seqs.max(1) * max_len) as u64 + geo.bytes_per_block();
        let budget = opts.kv_memory.resolve(None).map_err(ServeError::from)?.min(need);
        let num_blocks = fit_pool(engine.dev.as_ref(), c, geo.num_blocks(budget)?, opts)?;
        let mut sc = SchedulerConfig::for_model(c, num_blocks);
        sc.block_size = opts.block_size;
        sc.max_seqs = opts.max_seqs;
        sc.max_batch_tokens = opts.max_batch_tokens;
        sc.max_model_len = max_len;
        sc.eos_token_ids = engine.eos.clone();
        if let Some(p) = opts.prefix_caching {
            sc.prefix_caching = p;
        }
        let sched = Scheduler::new(sc)?;
        let dev = engine.dev.as_ref();
        let t_max = opts.max_batch_tokens.max(opts.max_seqs);
        let (pools, family) = match &engine.weights {
            Weights::Qwen3(_) => (
                KvPools::new(c, dev, num_blocks, opts.block_size, opts.kv_dtype)?,
                Family::Dense(BatchWorkspace::new(c, dev, t_max, opts.max_seqs)?),
            ),
            Weights::Qwen3_5(_) => (
                hybrid::kv_pools(c, dev, num_blocks, opts.block_size, opts.kv_dtype)?,
                Family::Hybrid {
                    ws: HybridWorkspace::new(c, dev, t_max, opts.max_seqs)?,
                    state: HybridState::new(c, dev, opts.max_seqs)?,
                    state_seqs: dev.alloc(DType::U32, &[opts.max_seqs, crate::op::STATE_SEQ_FIELDS])?,
                },
            ),
        };
        let max_blocks = max_len.div_ceil(opts.block_size);
        let u = |n: usize| dev.alloc(DType::U32, &[n.max(1)]);
        let bufs = PlanBuffers {
            ids: u(t_max)?,
            positions: u(t_max)?,
            slots: u(t_max)?,
            block_tables: u(opts.max_seqs * max_blocks)?,
            seqs: u(opts.max_seqs * 3)?,
            sample_rows: u(opts.max_seqs)?,
            sample_params: dev.alloc(DType::F32, &[opts.max_seqs.max(1), 4])?,
            picked: [
                u(opts.max_seqs * 2 * (1 + MAX_TOP_LOGPROBS))?,
                u(opts.max_seqs * 2 * (1 + MAX_TOP_LOGPROBS))?,
            ],
            max_blocks,
        };
        log::info!(
            "serving: {num_blocks} KV blocks of {} tokens ({} MiB, {}), {} sequences, {} tokens a step",
            opts.block_size,
            (num_blocks as u64 * geo.bytes_per_block()) >> 20,
            opts.kv_dtype,
            opts.max_seqs,
            opts.max_batch_tokens
        );
        let mut e = ServeEngine {
            flights: Default::default(),
            next_picked: 0,
            pipelined: false,
            unlaunched: vec![],
            engine,
            sched,
            pools,
            family,
            bufs,
            steps: 0,
            tokens_fed: 0,
        };
        e.pipelined = e.pipelined_ok();
        Ok(e)
    }

    /// Queues a request; refused (with the reason) when it could never run.
    pub fn add(&mut self, req: Request) -> Result<()> {
        if let Some(k) = req.sampling.logprobs.filter(|&k| k > MAX_TOP_LOGPROBS) {
            return Err(Error::Other(format!(
                "request {}: logprobs {k} exceeds the most alternatives a token can have, {MAX_TOP_LOGPROBS}",
                req.id
            )));
        }
        if let Some(&bad) = req.prompt.iter().find(|&&i| i as usize >= self.engine.cfg.vocab_size) {
            return Err(Error::Other(format!(
                "request {}: token id {bad} is outside the vocabulary of {}",
                req.id, self.engine.cfg.vocab_size
            )));
        }
        Ok(self.sched.add(req)?)
    }

    /// Cancels a request: its blocks are free at once.
    pub fn abort(&mut self, id: RequestId) -> bool {
        self.sched.abort(id)
    }

    pub fn stats(&self) -> Stats {
        self.sched.stats()
    }

    /// Whether steps overlap (on where the device allows it). Off: each step's tokens come back
    /// before the next is planned (the same tokens either way: for tests and profiles).
    pub fn set_pipelining(&mut self, on: bool) {
        self.pipelined = on && self.pipelined_ok();
    }

    fn pipelined_ok(&self) -> bool {
        let dev = self.engine.dev.as_ref();
        dev.capability(Capability::PipelinedDecode).is_yes()
            && dev.supports(&sample_desc(1, self.engine.cfg.vocab_size, 0)).is_yes()
    }

    /// Steps submitted whose tokens are not back yet.
    pub fn steps_in_flight(&self) -> usize {
        self.flights.len()
    }

    /// True when no request is waiting, running or in flight.
    pub fn is_idle(&self) -> bool {
        self.sched.is_idle()
    }

    /// Steps run and tokens fed so far.
    pub fn counters(&self) -> (u64, u64) {
        (self.steps, self.tokens_fed)
    }

    /// KV bytes a token costs.
    pub fn kv_bytes_per_token(&self) -> u64 {
        let g = KvGeometry::from_config(&self.engine.cfg, self.pools.dtype, self.pools.block_size);
        g.map(|g| g.bytes_per_token()).unwrap_or(0)
    }

    /// Runs one scheduled step and returns the tokens it produced (none when nothing ran or
    /// only prefill chunks that sample nothing ran). Pipelined where the device reads back
    /// asynchronously and samples on the device: the step after this one is planned
    /// (`Scheduler::schedule_ahead`), recorded and submitted before this one's tokens are read
    /// back, its token ids taken on the device from this step's picks, so the host records a step
    /// while the device runs the previous one. Its tokens come out of the next call.
    pub fn step(&mut self) -> Result<Vec<Event>> {
        self.try_step().inspect_err(|_| self.recover())
    }

    /// After a failed step: the steps in flight are dropped with every request they carried
    /// (aborted, their blocks freed), so the engine goes on with the others instead of refusing
    /// every later step.
    fn recover(&mut self) {
        while let Some(f) = self.flights.pop_front() {
            if let Pick::Device(t, _) = f.read {
                let _ = self.engine.dev.finish_read(t);
            }
            for q in &f.plan.seqs {
                self.sched.abort(q.id);
            }
        }
        for id in std::mem::take(&mut self.unlaunched) {
            self.sched.abort(id);
        }
        self.sched.drop_in_flight();
    }

    fn try_step(&mut self) -> Result<Vec<Event>> {
        if self.flights.is_empty() {
            let plan = self.sched.schedule()?;
            if plan.is_empty() {
                return Ok(vec![]);
            }
            self.launch(plan, None)?;
        }
        if self.pipelined && self.flights.len() == 1 && self.flights[0].k == 0 {
            if let Some(plan) = self.sched.schedule_ahead() {
                let ids = self.flights[0].picked;
                self.launch(plan, Some(ids))?;
            }
        }
        let f = self.flights.pop_front().expect("a step in flight");
        let picked = self.finish(f.plan.seqs.iter().filter(|q| q.sample).collect(), f.k, f.read)?;
        let mut sampled = Vec::with_capacity(picked.len());
        let mut extra: HashMap<RequestId, (Option<f64>, Vec<(u32, f64)>)> = HashMap::new();
        for (id, tok, lp) in picked {
            sampled.push((id, tok));
            if let Some(lp) = lp {
                extra.insert(id, lp);
            }
        }
        let events = self.sched.commit(&StepResult { sampled })?;
        Ok(events
            .into_iter()
            .map(|e| {
                let (logprob, top) = extra.remove(&e.id).unwrap_or_default();
                Event {
                    id: e.id,
                    token: e.token,
                    logprob,
                    top,
                    finish: e.finish,
                }
            })
            .collect())
    }

    /// Uploads `plan`, records the family's forward and the sampling of its rows, and submits it
    /// with the read-back of the picks. `ids_from`: the picks buffer whose first rows are this
    /// plan's token ids (an ahead plan), else the ids go up from the host.
    fn launch(&mut self, plan: StepPlan, ids_from: Option<usize>) -> Result<()> {
        let ids: Vec<RequestId> = plan.seqs.iter().map(|q| q.id).collect();
        self.launch_plan(plan, ids_from)
            .inspect_err(|_| self.unlaunched.extend(ids))
    }

    fn launch_plan(&mut self, plan: StepPlan, ids_from: Option<usize>) -> Result<()> {
        let (t, s) = (plan.num_tokens(), plan.seqs.len());
        let rows: Vec<u32> = plan.sample_rows().into_iter().map(|r| r as u32).collect();
        let r = rows.len();
        let mb = plan.seqs.iter().map(|q| q.block_table.len()).max().unwrap_or(1).max(1);
        debug_assert!(mb <= self.bufs.max_blocks);
        let mut tables = vec![0u32; s * mb];
        let mut seqs = Vec::with_capacity(s * 3);
        let mut first = 0u32;
        for (i, q) in plan.seqs.iter().enumerate() {
            tables[i * mb..i * mb + q.block_table.len()].copy_from_slice(&q.block_table);
            seqs.extend([first, q.tokens.len() as u32, q.context_len as u32]);
            first += q.tokens.len() as u32;
        }
        let dev = self.engine.dev.as_ref();
        let b = &self.bufs;
        let ids = match ids_from {
            Some(p) => b.picked[p].view(0, &[t])?,
            None => b.ids.view(0, &[t])?,
        };
        let batch = Batch {
            t,
            s,
            r,
            ids,
            positions: b.positions.view(0, &[t])?,
            slots: b.slots.view(0, &[t])?,
            block_tables: b.block_tables.view(0, &[s, mb])?,
            seqs: b.seqs.view(0, &[s, 3])?,
            sample_rows: b.sample_rows.view(0, &[r.max(1)])?,
        };
        if ids_from.is_none() {
            dev.upload(&batch.ids, &u32s(&plan.token_ids()))?;
        }
        dev.upload(&batch.positions, &u32s(&plan.positions()))?;
        dev.upload(&batch.slots, &u32s(&plan.slots()))?;
        dev.upload(&batch.block_tables, &u32s(&tables))?;
        dev.upload(&batch.seqs, &u32s(&seqs))?;
        if r > 0 {
            dev.upload(&batch.sample_rows, &u32s(&rows))?;
        }
        let c = &self.engine.cfg;
        match (&self.engine.weights, &self.family) {
            (Weights::Qwen3(w), Family::Dense(ws)) => {
                qwen3::forward_paged(w, ws, &self.pools, &batch, c, dev, &mut |_, _, _| Ok(()))?
            }
            (Weights::Qwen3_5(w), Family::Hybrid { ws, state, state_seqs }) => {
                // per sequence: its rows, its state slot, and whether its chunk starts it afresh
                let words: Vec<u32> = plan
                    .seqs
                    .iter()
                    .zip(seqs.chunks(3))
                    .flat_map(|(q, d)| [d[0], d[1], q.state_slot as u32, (q.positions[0] == 0) as u32])
                    .collect();
                let sv = state_seqs.view(0, &[s, crate::op::STATE_SEQ_FIELDS])?;
                dev.upload(&sv, &u32s(&words))?;
                hybrid::forward_paged(w, ws, &self.pools, state, &batch, &sv, c, dev, &mut |_, _, _| Ok(()))?
            }
            _ => unreachable!("the family's buffers follow its weights"),
        }
        self.steps += 1;
        self.tokens_fed += t as u64;
        // the picks alternate between two buffers: an ahead step reads its ids from one while
        // its own picks go to the other
        let picked = ids_from.map_or(self.next_picked, |p| 1 - p);
        self.next_picked = 1 - picked;
        let asks: Vec<&super::PlannedSeq> = plan.seqs.iter().filter(|q| q.sample).collect();
        let (k, read) = if asks.is_empty() {
            (0, Pick::Nothing)
        } else {
            self.record_pick(&asks, picked)?
        };
        self.flights.push_back(Flight { plan, k, picked, read });
        Ok(())
    }
    /// The loaded model back (its KV pools freed), for another engine over the same weights. A
    /// step still in flight is waited for first.
    pub fn into_engine(mut self) -> Engine {
        while let Some(f) = self.flights.pop_front() {
            if let Pick::Device(t, _) = f.read {
                let _ = self.engine.dev.finish_read(t);
            }
        }
        self.engine
    }

    /// Runs every queued request to its end; each request's events in order, by id.
    pub fn run_to_end(&mut self) -> Result<HashMap<RequestId, Vec<Event>>> {
        let mut out: HashMap<RequestId, Vec<Event>> = HashMap::new();
        while !self.is_idle() {
            for e in self.step()? {
                out.entry(e.id).or_default().push(e);
            }
        }
        Ok(out)
    }
}

#[path = "pick.rs"]
mod pick;
use pick::{sample_desc, Pick};

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
