//! One request's run through the engine thread, for both endpoints: the checks that need the model
//! (prompt length against the context, token ids against the vocabulary), admission into the bounded
//! queue, submission of its `n` choices, then the tokens as they come, detokenized (stop strings
//! end a choice and abort it in the engine), with logprobs, latencies and usage. Dropping a `Run`
//! (its client went away) aborts every choice still going, which frees its KV blocks at once.
use super::app::AppState;
use super::engine_thread::{Cmd, Msg};
use super::error::ApiError;
use super::params::Common;
use super::types::Usage;
use crate::model::stream::StreamDecoder;
use crate::serve::{FinishReason, Request, RequestId, SamplingParams};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// A token's logprob with its alternatives, tokens spelled as their decoded text.
#[derive(Clone, Debug)]
pub struct TokenLp {
    pub text: String,
    pub logprob: f64,
    pub top: Vec<(String, f64)>,
}

/// What one engine event added to a choice.
#[derive(Clone, Debug)]
pub struct Update {
    pub index: usize,
    pub delta: String,
    pub logprob: Option<TokenLp>,
    pub finish: Option<&'static str>,
}

struct Choice {
    id: RequestId,
    decoder: StreamDecoder,
    tokens: usize,
    last: Option<Instant>,
    finish: Option<&'static str>,
}

pub struct Run {
    state: Arc<AppState>,
    rx: UnboundedReceiver<(usize, Msg)>,
    choices: Vec<Choice>,
    prompt_tokens: usize,
    arrived: Instant,
    first_token: bool,
    /// sequences this run holds in the admission count
    admitted: usize,
    /// tokens that came while `start` waited for the other choices' acceptance
    pending: VecDeque<(usize, Msg)>,
}

/// The prompt's ids and the request's shared fields, ready to run.
pub struct Job {
    pub prompt: Vec<u32>,
    /// the field the prompt came from (messages or prompt), for the errors about it
    pub prompt_field: &'static str,
    pub common: Common,
    pub logprobs: Option<usize>,
    pub arrived: Instant,
}

fn finish_str(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Stop | FinishReason::Eos => "stop",
        FinishReason::Length => "length",
    }
}

impl Run {
    /// Checks the job against the model, admits it and waits until the engine took every choice.
    pub async fn start(state: Arc<AppState>, job: Job) -> Result<Run, ApiError> {
        let loaded = state.loaded()?;
        let (p, ctx) = (job.prompt.len(), loaded.max_ctx);
        let pf = job.prompt_field;
        if p == 0 {
            return Err(ApiError::field(pf, "the prompt has no tokens"));
        }
        if let Some(&bad) = job.prompt.iter().find(|&&t| t as usize >= loaded.vocab_size) {
            return Err(ApiError::field(
                pf,
                format!("token id {bad} is outside the vocabulary of {}", loaded.vocab_size),
            ));
        }
        if p >= ctx {
            return Err(ApiError::context_length(
                pf,
                format!(
                    "this model's maximum context length is {ctx} tokens, and the prompt has {p} tokens: no room \
                     to generate"
                ),
            ));
        }
        let c = &job.common;
        let max_tokens = match c.max_tokens {
            Some(m) if p + m > ctx => {
                return Err(ApiError::context_length(
                    "max_tokens",
                    format!(
                        "this model's maximum context length is {ctx} tokens; the prompt has {p} tokens and \
                         max_tokens asks for {m} more ({} in all)",
                        p + m
                    ),
                ))
            }
            Some(m) => m,
            None => ctx - p,
        };
        // admission: the bounded queue counts sequences (a request of n choices takes n)
        let limit = state.cfg.max_seqs + state.cfg.max_queue;
        let prev = state.outstanding.fetch_add(c.n, Ordering::SeqCst);
        let (tx, rx) = unbounded_channel();
        let mut run = Run {
            state: state.clone(),
            rx,
            choices: Vec::with_capacity(c.n),
            prompt_tokens: p,
            arrived: job.arrived,
            first_token: false,
            admitted: c.n,
            pending: VecDeque::new(),
        };
        if prev + c.n > limit {
            return Err(ApiError::queue_full(limit));
        }
        if state.shutting_down.load(Ordering::SeqCst) {
            return Err(ApiError::unavailable("the server is shutting down"));
        }
        let base_seed = c.seed.unwrap_or_else(random_seed);
        for i in 0..c.n {
            let id = RequestId(state.next_id.fetch_add(1, Ordering::SeqCst));
            let req = Request {
                id,
                prompt: job.prompt.clone(),
                max_tokens,
                stop_token_ids: vec![],
                sampling: SamplingParams {
                    temperature: c.temperature,
                    top_k: c.top_k,
                    top_p: c.top_p,
                    seed: base_seed.wrapping_add(i as u64),
                    logprobs: job.logprobs,
                },
            };
            run.choices.push(Choice {
                id,
                decoder: StreamDecoder::new(&c.stop),
                tokens: 0,
                last: None,
                finish: None,
            });
            state.send(Cmd::Submit {
                req,
                index: i,
                tx: tx.clone(),
            })?;
        }
        drop(tx);
        let mut accepted = 0;
        while accepted < c.n {
            match run.rx.recv().await {
                Some((_, Msg::Accepted)) => accepted += 1,
                Some((_, Msg::Refused(why))) => return Err(ApiError::field("max_tokens", why)),
                Some((_, Msg::Failed(why))) => return Err(ApiError::internal(why)),
                // the engine may step between two of the choices' submissions: keep the early token
                Some(m @ (_, Msg::Token(_))) => run.pending.push_back(m),
                None => return Err(ApiError::unavailable("the server is shutting down")),
            }
        }
        state.metrics.add_prompt((p * c.n) as u64);
        Ok(run)
    }

    /// The next token's update, None once every choice finished; an error when the engine failed
    /// or the shutdown's grace period ran out.
    pub async fn next(&mut self) -> Option<Result<Update, ApiError>> {
        loop {
            if self.choices.iter().all(|c| c.finish.is_some()) {
                return None;
            }
            let next = match self.pending.pop_front() {
                Some(m) => Some(m),
                None => self.rx.recv().await,
            };
            let Some((index, msg)) = next else {
                for c in &mut self.choices {
                    c.finish.get_or_insert("abort");
                }
                return Some(Err(ApiError::unavailable(
                    "the server is shutting down: request aborted",
                )));
            };
            let ev = match msg {
                Msg::Token(ev) => ev,
                Msg::Failed(why) => {
                    for c in &mut self.choices {
                        c.finish.get_or_insert("abort");
                    }
                    return Some(Err(ApiError::internal(format!("the engine failed: {why}"))));
                }
                Msg::Accepted | Msg::Refused(_) => continue,
            };
            let now = Instant::now();
            if !self.first_token {
                self.first_token = true;
                self.state.metrics.ttft((now - self.arrived).as_secs_f64());
            }
            let loaded = self.state.loaded().ok()?;
            let tok = loaded.tokenizer.as_ref();
            let c = &mut self.choices[index];
            if c.finish.is_some() {
                // a token already in flight when a stop string ended the choice
                continue;
            }
            if let Some(t) = c.last.replace(now) {
                self.state.metrics.itl((now - t).as_secs_f64());
            }
            c.tokens += 1;
            let mut delta = match tok {
                Some(t) => match c.decoder.push(t, ev.token) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(ApiError::internal(e.to_string()))),
                },
                None => String::new(),
            };
            let spell = |id: u32| tok.and_then(|t| t.decode(&[id]).ok()).unwrap_or_default();
            let logprob = ev.logprob.map(|lp| TokenLp {
                text: spell(ev.token),
                logprob: lp,
                top: ev.top.iter().map(|&(id, l)| (spell(id), l)).collect(),
            });
            if let Some(f) = ev.finish {
                delta.push_str(&c.decoder.finish());
                c.finish = Some(finish_str(f));
            } else if c.decoder.stopped() {
                c.finish = Some("stop");
                let _ = self.state.send(Cmd::Abort(c.id));
            }
            return Some(Ok(Update {
                index,
                delta,
                logprob,
                finish: c.finish,
            }));
        }
    }

    pub fn usage(&self) -> Usage {
        let completion_tokens = self.choices.iter().map(|c| c.tokens).sum();
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens,
            total_tokens: self.prompt_tokens + completion_tokens,
        }
    }

    pub fn n(&self) -> usize {
        self.choices.len()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        for c in &self.choices {
            if c.finish.is_none() {
                let _ = self.state.send(Cmd::Abort(c.id));
            }
        }
        self.state.outstanding.fetch_sub(self.admitted, Ordering::SeqCst);
    }
}

/// A seed for a request that gave none: different per request, from the clock and a counter.
fn random_seed() -> u64 {
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let x = t ^ N.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // splitmix64's finalizer, so nearby clocks give unrelated seeds
    let x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A response id's number: unique in this process, unrelated across processes.
pub fn request_uid() -> u64 {
    random_seed()
}
