//! `wgllm run`'s generation: the prompt as one request on the serving engine (paged KV sized for
//! this request alone), its tokens streamed as they come. Sampling the serving engine has no knob
//! for yet (repetition / presence / frequency penalties, min-p, more alternatives than
//! `Op::Sample` returns) runs through `Engine::generate` instead (one sequence as a batch of one
//! over its own paged pool, model/lone.rs), so every flag keeps its meaning.
use super::super::sampling_args::SamplingArgs;
use crate::backend::BatchInvariance;
use crate::dtype::DType;
use crate::engine::sampler::Sampler;
use crate::engine::{Engine, Step};
use crate::error::Result;
use crate::model::stream::StreamDecoder;
use crate::model::tokenizer::Tokenizer;
use crate::serve::{FinishReason, KvGeometry, KvMemory, Request, RequestId, SamplingParams, ServeEngine, ServeOptions};
use std::time::Instant;

/// The text as it streams: each token's piece printed (unless the output is one JSON object) and
/// checked against the stop strings.
pub struct Streamer<'a> {
    tok: Option<&'a Tokenizer>,
    pub stream: StreamDecoder,
    json: bool,
    /// when prefill began (after the serving engine's pools are set up) and when the first token
    /// came: prefill's end
    pub started: Instant,
    pub first_at: Option<Instant>,
}

impl<'a> Streamer<'a> {
    pub fn new(tok: Option<&'a Tokenizer>, stops: &[String], json: bool) -> Self {
        Streamer {
            tok,
            stream: StreamDecoder::new(stops),
            json,
            started: Instant::now(),
            first_at: None,
        }
    }

    /// Takes one generated token; false once a stop string has ended the text.
    fn push(&mut self, token: u32) -> Result<bool> {
        self.first_at.get_or_insert_with(Instant::now);
        let Some(t) = self.tok else { return Ok(true) };
        let mut failed = None;
        if !super::print_piece(&mut self.stream, t, token, self.json, &mut failed) {
            if let Some(err) = failed {
                return Err(err);
            }
        }
        Ok(!self.stream.stopped())
    }
}

/// What generation gave: every token (the one a stop string ended on and an EOS included), and
/// whether the last one is an end-of-sequence token.
pub struct Generated {
    pub steps: Vec<Step>,
    pub eos_hit: bool,
}

/// Generates up to `n` tokens after `prompt` (which fit the context: `check::fit`), streaming
/// them through `out`. `logprobs`: the top-K of each step (Some(0): the chosen token's only).
pub fn generate(
    e: Engine,
    prompt: &[u32],
    n: usize,
    sampling: &SamplingArgs,
    logprobs: Option<usize>,
    ignore_eos: bool,
    out: &mut Streamer,
) -> Result<Generated> {
    match sampling.serve_params(logprobs) {
        Some(p) => on_serve(e, prompt, n, p, ignore_eos, out),
        None => on_engine(e, prompt, n, sampling, logprobs, ignore_eos, out),
    }
}

/// The serving engine's options for one request of `tokens` positions (prompt + n): one sequence,
/// a pool that holds exactly its blocks (and one spare), KV in f32 as a lone sequence keeps it
/// (model/lone.rs), the single-stream kernels (tests/serve.rs `as_run`: the oracle's near-tie rule on
/// every golden model). No prefix cache: nothing could share it.
///
/// The block size is a lone sequence's (`lone::block_for`: it divides the context). A block's size
/// does not change a token (tests/serve.rs: preempted, blocks of 4).
fn one_request(e: &Engine, tokens: usize) -> Result<ServeOptions> {
    let block = crate::model::lone::block_for(e.max_ctx);
    let geo = KvGeometry::from_config(&e.cfg, DType::F32, block)?;
    let blocks = tokens.div_ceil(block) + 1;
    Ok(ServeOptions {
        kv_dtype: DType::F32,
        kv_memory: KvMemory::Bytes(blocks as u64 * geo.bytes_per_block()),
        block_size: block,
        max_seqs: 1,
        prefix_caching: Some(false),
        // alone in every step: the single-stream kernels (tensor-core prefill from 64 rows)
        kernels: Some(BatchInvariance::Off),
        ..ServeOptions::default()
    })
}

fn on_serve(
    mut e: Engine,
    prompt: &[u32],
    n: usize,
    sampling: SamplingParams,
    ignore_eos: bool,
    out: &mut Streamer,
) -> Result<Generated> {
    if ignore_eos {
        // the scheduler ends a request at the model's EOS ids; with none, only -n or the context
        e.eos.clear();
    }
    let opts = one_request(&e, prompt.len() + n)?;
    let mut s = ServeEngine::new(e, &opts)?;
    let id = RequestId(0);
    s.add(Request {
        id,
        prompt: prompt.to_vec(),
        max_tokens: n,
        stop_token_ids: vec![],
        sampling,
    })?;
    out.started = Instant::now();
    let (mut steps, mut eos_hit) = (Vec::with_capacity(n), false);
    'run: while !s.is_idle() {
        for ev in s.step()? {
            let go_on = out.push(ev.token)?;
            steps.push(Step {
                token: ev.token,
                logprob: ev.logprob,
                top: ev.top,
            });
            if let Some(f) = ev.finish {
                eos_hit = f == FinishReason::Eos;
                break 'run;
            }
            if !go_on {
                // a stop string ended the text: the request's blocks are freed at once
                s.abort(id);
                break 'run;
            }
        }
    }
    // a step still in flight (pipelined decode) is waited for before the pools go
    drop(s.into_engine());
    Ok(Generated { steps, eos_hit })
}

fn on_engine(
    mut e: Engine,
    prompt: &[u32],
    n: usize,
    sampling: &SamplingArgs,
    logprobs: Option<usize>,
    ignore_eos: bool,
    out: &mut Streamer,
) -> Result<Generated> {
    log::info!("penalties, min-p or many alternatives: generating through Engine::generate");
    let mut sampler = Sampler::new(sampling.sampling());
    // on_token cannot return an error: it is kept and returned once generate is done
    let mut failed = None;
    let mut on_token = |s: &Step| match out.push(s.token) {
        Ok(go_on) => go_on,
        Err(err) => {
            failed = Some(err);
            false
        }
    };
    let steps = e.generate(prompt, n, &mut sampler, logprobs, !ignore_eos, &mut on_token)?;
    if let Some(err) = failed {
        return Err(err);
    }
    let eos_hit = !ignore_eos && steps.last().is_some_and(|s| e.eos.contains(&s.token));
    Ok(Generated { steps, eos_hit })
}
