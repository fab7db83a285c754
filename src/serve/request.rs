//! What a caller of the serving engine hands in and gets back: requests, their sampling
//! parameters (carried, never read, by the scheduler), token events with finish reasons, refusals
//! and the engine's stats.
use std::fmt;

/// A request's id, chosen by the caller and unique among the requests the scheduler holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How the engine picks a request's tokens. The scheduler only carries it into the step plan; the
/// engine's sampler reads it. `seed` with the plan's `generated` index gives each sampled token its
/// own random stream, so the same seed gives the same output whatever else is in the batch and
/// whether or not the request was preempted and recomputed.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingParams {
    /// 0 is greedy
    pub temperature: f32,
    /// 0 is off
    pub top_k: usize,
    /// 1.0 is off
    pub top_p: f32,
    pub seed: u64,
    /// the logprob of each chosen token and the top-K logprobs (Some(0): the chosen token's only)
    pub logprobs: Option<usize>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
            logprobs: None,
        }
    }
}

/// One request: prompt token ids, at most `max_tokens` generated tokens, its own stop token ids
/// (the model's EOS ids are the scheduler's, see `SchedulerConfig::eos_token_ids`).
#[derive(Clone, Debug)]
pub struct Request {
    pub id: RequestId,
    pub prompt: Vec<u32>,
    pub max_tokens: usize,
    pub stop_token_ids: Vec<u32>,
    pub sampling: SamplingParams,
}

impl Request {
    /// A greedy request with no stop tokens of its own.
    pub fn greedy(id: u64, prompt: Vec<u32>, max_tokens: usize) -> Self {
        Request {
            id: RequestId(id),
            prompt,
            max_tokens,
            stop_token_ids: vec![],
            sampling: SamplingParams::default(),
        }
    }
}

/// Why a request ended, as the engine reports it (OpenAI's `finish_reason`: stop and eos are both
/// "stop" there; the engine may tell them apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// one of the request's stop token ids was sampled (it is the last token of the request)
    Stop,
    /// one of the model's EOS ids was sampled (it is the last token of the request)
    Eos,
    /// max_tokens generated, or the sequence reached the model's context length
    Length,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Eos => "eos",
            FinishReason::Length => "length",
        }
    }
}

/// A token a request received in a step; `finish` is set on its last one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenEvent {
    pub id: RequestId,
    pub token: u32,
    pub finish: Option<FinishReason>,
}

/// Why `add` refused a request: it could never run to completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefuseReason {
    EmptyPrompt,
    ZeroMaxTokens,
    DuplicateId,
    /// the prompt leaves no position to generate in: prompt >= the model's context
    PromptTooLong {
        prompt: usize,
        max_model_len: usize,
    },
    /// prompt + max_tokens (capped at the context) needs more KV blocks than the whole pool has
    TooManyBlocks {
        tokens: usize,
        needed: usize,
        pool: usize,
    },
}

impl fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefuseReason::EmptyPrompt => write!(f, "the prompt is empty"),
            RefuseReason::ZeroMaxTokens => write!(f, "max_tokens is 0"),
            RefuseReason::DuplicateId => write!(f, "a request with this id is already queued or running"),
            RefuseReason::PromptTooLong { prompt, max_model_len } => write!(
                f,
                "the prompt has {prompt} tokens, the model's context is {max_model_len}: no room to generate"
            ),
            RefuseReason::TooManyBlocks { tokens, needed, pool } => write!(
                f,
                "{tokens} tokens of KV need {needed} blocks, the whole pool has {pool} (raise --kv-memory or lower max_tokens)"
            ),
        }
    }
}

/// A snapshot of the scheduler for the engine's stats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub running: usize,
    pub waiting: usize,
    pub blocks_total: usize,
    /// held by at least one sequence
    pub blocks_used: usize,
    /// held by nobody but kept by the prefix cache (evicted when the pool needs them)
    pub blocks_cached: usize,
    /// on the free list
    pub blocks_free: usize,
    /// full prompt blocks found in the prefix cache / not found, at admission
    pub prefix_hits: u64,
    pub prefix_misses: u64,
    pub prefix_evictions: u64,
    pub preemptions: u64,
    pub finished: u64,
    pub aborted: u64,
}

impl Stats {
    /// hits / (hits + misses) over full prompt blocks; 0 before any lookup.
    pub fn prefix_hit_rate(&self) -> f64 {
        let n = self.prefix_hits + self.prefix_misses;
        if n == 0 {
            0.0
        } else {
            self.prefix_hits as f64 / n as f64
        }
    }
}
