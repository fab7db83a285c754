//! Iteration-level continuous batching. Each `schedule` packs the decode token of every running
//! sequence and prefill chunks of waiting ones under a token budget and a sequence cap, first come
//! first served; `commit` takes the sampled tokens back. When blocks run out the newest running
//! sequence is preempted: its blocks freed, itself back at the head of the waiting queue, to be
//! recomputed from its prompt + generated tokens.
use super::block_pool::{BlockId, BlockPool, DEFAULT_BLOCK_SIZE};
use super::plan::{PlannedSeq, StepPlan, StepResult};
use super::prefix_cache::{BlockKey, PrefixCache};
use super::request::{FinishReason, RefuseReason, Request, RequestId, Stats, TokenEvent};
use super::ServeError;
use crate::model::config::Config;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

/// The token id an ahead plan feeds where the id is still on the device (`schedule_ahead`).
pub const PENDING_TOKEN: u32 = u32::MAX;

/// The scheduler's limits. `SchedulerConfig::for_model` fills the model's part.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    pub block_size: usize,
    pub num_blocks: usize,
    /// `--max-batch-tokens`: tokens one step feeds at most (decodes count 1 each)
    pub max_batch_tokens: usize,
    /// `--max-seqs`: sequences running at once (and the number of recurrent-state slots)
    pub max_seqs: usize,
    /// the model's context: no sequence grows past it (finish reason length)
    pub max_model_len: usize,
    /// the model's EOS ids: sampling one finishes a request with reason eos
    pub eos_token_ids: Vec<u32>,
    pub prefix_caching: bool,
    /// Some(model_type) for a model that keeps per-sequence recurrent state (Qwen3.5's Gated
    /// DeltaNet layers): a shared KV block cannot restore that state, so prefix caching is refused.
    pub recurrent_state: Option<String>,
}

pub const DEFAULT_MAX_SEQS: usize = 64;
pub const DEFAULT_MAX_BATCH_TOKENS: usize = 2048;

impl SchedulerConfig {
    /// Defaults for a model: block size 16, 64 sequences, 2048 tokens a step; prefix caching on,
    /// except for models with recurrent state (off: turning it on for them is refused by name).
    pub fn for_model(cfg: &Config, num_blocks: usize) -> Self {
        SchedulerConfig {
            block_size: DEFAULT_BLOCK_SIZE,
            num_blocks,
            max_batch_tokens: DEFAULT_MAX_BATCH_TOKENS,
            max_seqs: DEFAULT_MAX_SEQS,
            max_model_len: cfg.max_position_embeddings,
            eos_token_ids: cfg.eos_token_ids.clone(),
            prefix_caching: cfg.hybrid.is_none(),
            recurrent_state: cfg.hybrid.as_ref().map(|_| cfg.model_type.clone()),
        }
    }

    fn check(&self) -> Result<(), ServeError> {
        let bad = |field, reason: String| Err(ServeError::Config { field, reason });
        if self.block_size == 0 {
            return bad("block_size", "must be at least 1".into());
        }
        if self.num_blocks == 0 {
            return bad("num_blocks", "the KV pool has no block".into());
        }
        if (self.num_blocks as u64) * (self.block_size as u64) > u32::MAX as u64 {
            return bad(
                "num_blocks",
                format!(
                    "{} blocks of {} slots overflow a u32 slot index",
                    self.num_blocks, self.block_size
                ),
            );
        }
        if self.max_seqs == 0 {
            return bad("--max-seqs", "must be at least 1".into());
        }
        if self.max_batch_tokens < self.max_seqs {
            // otherwise a full batch of decodes could not all run in one step and the newest would starve
            return bad(
                "--max-batch-tokens",
                format!(
                    "{} is below --max-seqs {}: every running sequence's decode must fit one step",
                    self.max_batch_tokens, self.max_seqs
                ),
            );
        }
        if self.max_model_len < 2 {
            return bad(
                "max_model_len",
                format!("{} leaves no room to generate", self.max_model_len),
            );
        }
        if self.prefix_caching {
            if let Some(model) = &self.recurrent_state {
                return Err(ServeError::PrefixCacheUnsupported { model: model.clone() });
            }
        }
        Ok(())
    }
}

/// A request the scheduler holds, waiting or running.
pub(super) struct Seq {
    pub(super) req: Request,
    /// prompt + generated
    pub(super) tokens: Vec<u32>,
    /// leading tokens whose K and V are in the cache
    pub(super) computed: usize,
    pub(super) blocks: Vec<BlockId>,
    /// leading full blocks whose chain key is known (found in or offered to the prefix cache)
    pub(super) keyed: usize,
    /// the key of block `keyed - 1` (ROOT when 0)
    pub(super) chain: BlockKey,
    /// while running
    pub(super) state_slot: usize,
}

impl Seq {
    fn generated(&self) -> usize {
        self.tokens.len() - self.req.prompt.len()
    }
}

/// What the step in flight planned for one sequence.
struct Flight {
    id: RequestId,
    n: usize,
    sample: bool,
}

pub struct Scheduler {
    pub(super) cfg: SchedulerConfig,
    pub(super) cache: PrefixCache,
    pub(super) waiting: VecDeque<Seq>,
    /// in admission order, which is arrival order: the last one is the newest
    pub(super) running: Vec<Seq>,
    live: HashSet<RequestId>,
    free_state_slots: BTreeSet<usize>,
    /// planned and not yet committed, oldest first: at most two (`schedule_ahead`)
    in_flight: VecDeque<Vec<Flight>>,
    step: u64,
    preemptions: u64,
    finished: u64,
    aborted: u64,
}

impl Scheduler {
    pub fn new(cfg: SchedulerConfig) -> Result<Self, ServeError> {
        cfg.check()?;
        let cache = PrefixCache::new(BlockPool::new(cfg.num_blocks, cfg.block_size), cfg.prefix_caching);
        Ok(Scheduler {
            free_state_slots: (0..cfg.max_seqs).collect(),
            cfg,
            cache,
            waiting: VecDeque::new(),
            running: Vec::new(),
            live: HashSet::new(),
            in_flight: VecDeque::new(),
            step: 0,
            preemptions: 0,
            finished: 0,
            aborted: 0,
        })
    }
    pub fn config(&self) -> &SchedulerConfig {
        &self.cfg
    }
    pub(super) fn live_len(&self) -> usize {
        self.live.len()
    }
    /// Nothing waiting, running or in flight.
    pub fn is_idle(&self) -> bool {
        self.running.is_empty() && self.waiting.is_empty() && self.in_flight.is_empty()
    }

    fn blocks_for(&self, tokens: usize) -> usize {
        tokens.div_ceil(self.cfg.block_size)
    }

    /// Queues a request, or refuses one that could never finish: it would need more blocks than
    /// the whole pool, or its prompt fills the model's context.
    pub fn add(&mut self, req: Request) -> Result<(), ServeError> {
        let refuse = |reason| Err(ServeError::Refused { id: req.id, reason });
        let len = req.prompt.len();
        if len == 0 {
            return refuse(RefuseReason::EmptyPrompt);
        }
        if req.max_tokens == 0 {
            return refuse(RefuseReason::ZeroMaxTokens);
        }
        if self.live.contains(&req.id) {
            return refuse(RefuseReason::DuplicateId);
        }
        if len >= self.cfg.max_model_len {
            return refuse(RefuseReason::PromptTooLong {
                prompt: len,
                max_model_len: self.cfg.max_model_len,
            });
        }
        // the last sampled token is never fed, so it needs no KV slot
        let tokens = len.saturating_add(req.max_tokens).min(self.cfg.max_model_len) - 1;
        let needed = self.blocks_for(tokens);
        if needed > self.cfg.num_blocks {
            return refuse(RefuseReason::TooManyBlocks {
                tokens,
                needed,
                pool: self.cfg.num_blocks,
            });
        }
        self.live.insert(req.id);
        self.waiting.push_back(Seq {
            tokens: req.prompt.clone(),
            req,
            computed: 0,
            blocks: vec![],
            keyed: 0,
            chain: BlockKey::ROOT,
            state_slot: usize::MAX,
        });
        Ok(())
    }

    /// Drops a request wherever it is; its blocks are released at once (cached ones stay idle in
    /// the prefix cache). If it is in the step in flight, `commit` skips it. False if unknown.
    pub fn abort(&mut self, id: RequestId) -> bool {
        if let Some(i) = self.waiting.iter().position(|s| s.req.id == id) {
            self.waiting.remove(i);
        } else if let Some(i) = self.running.iter().position(|s| s.req.id == id) {
            let mut s = self.running.remove(i);
            self.release_seq(&mut s);
        } else {
            return false;
        }
        self.live.remove(&id);
        self.aborted += 1;
        true
    }

    /// Gives back a sequence's blocks (tail first, so its prefix stays cached longest) and its
    /// state slot, and forgets its KV.
    fn release_seq(&mut self, s: &mut Seq) {
        for &b in s.blocks.iter().rev() {
            self.cache.release(b);
        }
        s.blocks.clear();
        s.computed = 0;
        s.keyed = 0;
        s.chain = BlockKey::ROOT;
        self.free_state_slots.insert(s.state_slot);
        s.state_slot = usize::MAX;
    }

    fn preempt_newest(&mut self) {
        let mut s = self.running.pop().expect("preempt with nothing running");
        self.release_seq(&mut s);
        self.waiting.push_front(s);
        self.preemptions += 1;
    }

    fn grow(&mut self, i: usize, need: usize) {
        for _ in 0..need {
            let b = self.cache.allocate().expect("availability checked before growing");
            self.running[i].blocks.push(b);
        }
    }

    /// Forgets the steps in flight (the engine failed to run them and has aborted their
    /// requests): the next `schedule` plans afresh.
    pub fn drop_in_flight(&mut self) {
        self.in_flight.clear();
    }

    /// Steps planned and not yet committed.
    pub fn steps_in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Plans the next step. Every planned step must have been committed first.
    pub fn schedule(&mut self) -> Result<StepPlan, ServeError> {
        if !self.in_flight.is_empty() {
            return Err(ServeError::Protocol(format!(
                "schedule: step {} is not committed yet",
                self.step - 1
            )));
        }
        let bs = self.cfg.block_size;
        let mut budget = self.cfg.max_batch_tokens;
        let mut planned: Vec<(usize, usize)> = Vec::new(); // (index in running, tokens)
        let preemptions_before = self.preemptions;

        // 1. running sequences, oldest first: a decode token, or the next chunk of their prefill
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let s = &self.running[i];
            let n = (s.tokens.len() - s.computed).min(budget);
            let need = self.blocks_for(s.computed + n) - s.blocks.len();
            while self.cache.available() < need && i < self.running.len() {
                self.preempt_newest(); // the newest is never one already planned: those are older
            }
            if i == self.running.len() {
                break; // it was the newest itself
            }
            self.grow(i, need);
            planned.push((i, n));
            budget -= n;
            i += 1;
        }

        // 2. waiting sequences, first come first served, unless this step had to preempt (they
        // would only take back the blocks just freed)
        while self.preemptions == preemptions_before
            && budget > 0
            && self.running.len() < self.cfg.max_seqs
            && !self.waiting.is_empty()
        {
            let s = &self.waiting[0];
            let len = s.tokens.len();
            // at least one token is computed, so the last row has logits to sample from
            let eligible = (len - 1) / bs;
            let hits = self.cache.lookup(&s.tokens, eligible);
            let computed = hits.len() * bs;
            let n = (len - computed).min(budget);
            let need = self.blocks_for(computed + n) - hits.len();
            if self.cache.available() < need {
                for &(b, _) in hits.iter().rev() {
                    self.cache.release(b);
                }
                break; // strict FCFS: nobody overtakes the head
            }
            let mut s = self.waiting.pop_front().expect("non-empty");
            if self.cache.enabled() {
                self.cache.record(hits.len(), eligible - hits.len());
            }
            s.blocks = hits.iter().map(|h| h.0).collect();
            s.keyed = hits.len();
            s.chain = hits.last().map_or(BlockKey::ROOT, |h| h.1);
            s.computed = computed;
            s.state_slot = self.free_state_slots.pop_first().expect("fewer than max_seqs running");
            self.running.push(s);
            let i = self.running.len() - 1;
            self.grow(i, need);
            planned.push((i, n));
            budget -= n;
        }

        let plan = StepPlan {
            step: self.step,
            seqs: planned
                .iter()
                .map(|&(i, n)| self.plan_seq(&self.running[i], n))
                .collect(),
        };
        self.push_flight(&plan);
        Ok(plan)
    }

    fn push_flight(&mut self, plan: &StepPlan) {
        self.in_flight.push_back(
            plan.seqs
                .iter()
                .map(|p| Flight {
                    id: p.id,
                    n: p.tokens.len(),
                    sample: p.sample,
                })
                .collect(),
        );
        self.step += 1;
    }

    /// Plans the step after the one in flight before that step's tokens are known, so the engine
    /// can record it while the device runs the other: every running sequence decodes the token the
    /// step in flight samples for it (its id is `PENDING_TOKEN` here; the engine feeds it from the
    /// device). Only in the steady state where that is all the next step would do anyway: exactly
    /// one step in flight, in which every running sequence (in running order) sampled; nobody
    /// waiting; no sequence that finishes by length in the step in flight; blocks for every new
    /// token free without preemption. None otherwise (the engine then commits first). A sequence
    /// that stops in the step in flight (EOS, a stop token, an abort) has its ahead token dropped
    /// at the commit; its slot was in a block of its own, released with it.
    pub fn schedule_ahead(&mut self) -> Option<StepPlan> {
        if self.in_flight.len() != 1 || !self.waiting.is_empty() || self.running.is_empty() {
            return None;
        }
        let f = &self.in_flight[0];
        if f.len() != self.running.len() || !f.iter().zip(&self.running).all(|(f, s)| f.sample && f.id == s.req.id) {
            return None;
        }
        let mut need = 0;
        for s in &self.running {
            // the token in flight is index `generated`; it must not be the last one allowed
            let len = s.tokens.len() + 1;
            if s.generated() + 1 >= s.req.max_tokens || len >= self.cfg.max_model_len {
                return None;
            }
            need += self.blocks_for(len) - s.blocks.len();
        }
        if need > self.cache.available() {
            return None;
        }
        let bs = self.cfg.block_size;
        let mut seqs = Vec::with_capacity(self.running.len());
        for i in 0..self.running.len() {
            let p = self.running[i].tokens.len();
            let grow = self.blocks_for(p + 1) - self.running[i].blocks.len();
            self.grow(i, grow);
            let s = &self.running[i];
            seqs.push(PlannedSeq {
                id: s.req.id,
                tokens: vec![PENDING_TOKEN],
                positions: vec![p as u32],
                slots: vec![s.blocks[p / bs] * bs as u32 + (p % bs) as u32],
                block_table: s.blocks.clone(),
                context_len: p + 1,
                sample: true,
                generated: s.generated() + 1,
                state_slot: s.state_slot,
                sampling: s.req.sampling.clone(),
            });
        }
        let plan = StepPlan { step: self.step, seqs };
        self.push_flight(&plan);
        Some(plan)
    }

    fn plan_seq(&self, s: &Seq, n: usize) -> PlannedSeq {
        let bs = self.cfg.block_size;
        let start = s.computed;
        let positions: Vec<u32> = (start..start + n).map(|p| p as u32).collect();
        let slots = (start..start + n)
            .map(|p| s.blocks[p / bs] * bs as u32 + (p % bs) as u32)
            .collect();
        PlannedSeq {
            id: s.req.id,
            tokens: s.tokens[start..start + n].to_vec(),
            positions,
            slots,
            block_table: s.blocks.clone(),
            context_len: start + n,
            sample: start + n == s.tokens.len(),
            generated: s.generated(),
            state_slot: s.state_slot,
            sampling: s.req.sampling.clone(),
        }
    }

    /// Takes the step's sampled tokens: the planned tokens are now in the KV cache, newly full
    /// blocks go to the prefix cache, each sampled token is appended, and finished requests
    /// (stop token, EOS, max_tokens, the context) release their blocks. On a malformed result
    /// nothing changes and the step stays in flight.
    pub fn commit(&mut self, result: &StepResult) -> Result<Vec<TokenEvent>, ServeError> {
        let Some(flights) = self.in_flight.pop_front() else {
            return Err(ServeError::Protocol("commit: no step in flight".into()));
        };
        let mut sampled: HashMap<RequestId, u32> = HashMap::new();
        let mut bad = None;
        for &(id, t) in &result.sampled {
            let expected = flights.iter().any(|f| f.id == id && f.sample);
            if !expected {
                bad = Some(format!("commit: request {id} was not planned to sample this step"));
            } else if sampled.insert(id, t).is_some() {
                bad = Some(format!("commit: request {id} sampled twice"));
            }
        }
        for f in &flights {
            if f.sample && self.running.iter().any(|s| s.req.id == f.id) && !sampled.contains_key(&f.id) {
                bad = Some(format!("commit: no sampled token for request {}", f.id));
            }
        }
        if let Some(e) = bad {
            self.in_flight.push_front(flights);
            return Err(ServeError::Protocol(e));
        }

        let bs = self.cfg.block_size;
        let mut events = Vec::new();
        let mut done = Vec::new();
        for f in &flights {
            let Some(i) = self.running.iter().position(|s| s.req.id == f.id) else {
                continue; // aborted while the step ran
            };
            let s = &mut self.running[i];
            s.computed += f.n;
            if self.cache.enabled() {
                while s.keyed < s.computed / bs {
                    let k = s.keyed;
                    let chunk = &s.tokens[k * bs..(k + 1) * bs];
                    let key = BlockKey::chain(&s.chain, chunk);
                    self.cache.register(key, chunk, s.blocks[k]);
                    s.chain = key;
                    s.keyed += 1;
                }
            }
            if !f.sample {
                continue;
            }
            let t = sampled[&f.id];
            s.tokens.push(t);
            let finish = if self.cfg.eos_token_ids.contains(&t) {
                Some(FinishReason::Eos)
            } else if s.req.stop_token_ids.contains(&t) {
                Some(FinishReason::Stop)
            } else if s.generated() >= s.req.max_tokens || s.tokens.len() >= self.cfg.max_model_len {
                Some(FinishReason::Length)
            } else {
                None
            };
            events.push(TokenEvent {
                id: f.id,
                token: t,
                finish,
            });
            if finish.is_some() {
                done.push(f.id);
            }
        }
        for id in done {
            let i = self.running.iter().position(|s| s.req.id == id).expect("just seen");
            let mut s = self.running.remove(i);
            self.release_seq(&mut s);
            self.live.remove(&id);
            self.finished += 1;
        }
        Ok(events)
    }

    pub fn stats(&self) -> Stats {
        let pool = self.cache.pool();
        Stats {
            running: self.running.len(),
            waiting: self.waiting.len(),
            blocks_total: pool.num_blocks(),
            blocks_used: pool.num_used(),
            blocks_cached: self.cache.num_idle(),
            blocks_free: pool.num_free(),
            prefix_hits: self.cache.hits,
            prefix_misses: self.cache.misses,
            prefix_evictions: self.cache.evictions,
            preemptions: self.preemptions,
            finished: self.finished,
            aborted: self.aborted,
        }
    }
}
