//! A step plan: what the engine feeds the model in one forward, and what it hands back.
use super::block_pool::BlockId;
use super::request::{RequestId, SamplingParams};

/// One sequence's part of a step: a decode token, or a chunk of a prefill (a fresh prompt, or a
/// preempted sequence's prompt + generated tokens being recomputed).
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedSeq {
    pub id: RequestId,
    /// token ids to feed this step (1 for a decode)
    pub tokens: Vec<u32>,
    /// their positions: consecutive, from the number of tokens already in the KV cache. A chunk
    /// that starts at 0 starts a sequence afresh (the engine zeroes its recurrent state slot).
    pub positions: Vec<u32>,
    /// where each token's K and V go in the pools: block * block_size + offset
    pub slots: Vec<u32>,
    /// the sequence's blocks, in order, covering positions 0..=last of this step; the attention of
    /// this step reads keys 0..context_len through it
    pub block_table: Vec<BlockId>,
    /// keys the last token attends to: positions.last() + 1
    pub context_len: usize,
    /// a token is sampled from the last row of this chunk: only when the chunk reaches the end of
    /// the known tokens (the end of the prompt, or a decode)
    pub sample: bool,
    /// tokens this request has generated so far: the index of the token sampled this step, which
    /// with the request's seed gives the sampler its stream (see SamplingParams)
    pub generated: usize,
    /// this sequence's recurrent-state slot, 0..max_seqs, fixed while it runs (hybrid models)
    pub state_slot: usize,
    pub sampling: SamplingParams,
}

/// Everything one step runs. Sequences come in the order the scheduler took them: running ones
/// (oldest first), then newly admitted ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepPlan {
    /// counts from 0, one per `schedule`
    pub step: u64,
    pub seqs: Vec<PlannedSeq>,
}

impl StepPlan {
    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }
    /// Tokens fed this step (the M of every linear).
    pub fn num_tokens(&self) -> usize {
        self.seqs.iter().map(|s| s.tokens.len()).sum()
    }
    /// The flat batch: every sequence's tokens one after another.
    pub fn token_ids(&self) -> Vec<u32> {
        self.seqs.iter().flat_map(|s| s.tokens.iter().copied()).collect()
    }
    pub fn positions(&self) -> Vec<u32> {
        self.seqs.iter().flat_map(|s| s.positions.iter().copied()).collect()
    }
    pub fn slots(&self) -> Vec<u32> {
        self.seqs.iter().flat_map(|s| s.slots.iter().copied()).collect()
    }
    /// Where each sequence starts in the flat batch, plus the total at the end (len seqs + 1).
    pub fn query_starts(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.seqs.len() + 1);
        let mut at = 0u32;
        out.push(0);
        for s in &self.seqs {
            at += s.tokens.len() as u32;
            out.push(at);
        }
        out
    }
    /// Rows of the flat batch whose logits are sampled (the last token of each sampling chunk).
    pub fn sample_rows(&self) -> Vec<usize> {
        let starts = self.query_starts();
        self.seqs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.sample)
            .map(|(i, _)| starts[i + 1] as usize - 1)
            .collect()
    }
}

/// What the engine hands back for a step: the token sampled for every sequence planned with
/// `sample`, by id, in any order. A request aborted while the step ran may be present or not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepResult {
    pub sampled: Vec<(RequestId, u32)>,
}
