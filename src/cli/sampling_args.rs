//! The sampling flags `run` and `chat` share, each checked by its value parser before any weights
//! load.
use super::run::check;
use crate::engine::sampler::Sampling;
use crate::op::MAX_TOP_LOGPROBS;
use crate::serve::SamplingParams;
use clap::Args;

#[derive(Args, Clone, Debug)]
pub struct SamplingArgs {
    /// Sampling temperature (>= 0; 0 = greedy)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = check::temperature)]
    pub temperature: f32,
    /// Keep the K most likely tokens (>= 0; 0 = all)
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = check::int_at_least("--top-k", 0))]
    pub top_k: usize,
    /// Nucleus sampling: the smallest set of tokens whose probability reaches P (0 < P <= 1; 1 = all)
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = check::top_p)]
    pub top_p: f32,
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = check::seed)]
    pub seed: u64,
    /// Divide the positive logits (multiply the negative ones) of every token seen in the prompt
    /// or the output by R (> 0; 1 = off, above 1 discourages repeats)
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = check::repetition_penalty)]
    pub repetition_penalty: f32,
    /// Subtract P once from the logit of every token that occurs in the output (-2 <= P <= 2; 0 = off)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = check::penalty("--presence-penalty"))]
    pub presence_penalty: f32,
    /// Subtract F times its count in the output from each token's logit (-2 <= F <= 2; 0 = off)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = check::penalty("--frequency-penalty"))]
    pub frequency_penalty: f32,
    /// When sampling, drop the tokens less likely than P times the most likely one (after the
    /// temperature; 0 <= P <= 1; 0 = off; greedy ignores it)
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = check::min_p)]
    pub min_p: f32,
}

impl SamplingArgs {
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            seed: self.seed,
            repetition_penalty: self.repetition_penalty,
            presence_penalty: self.presence_penalty,
            frequency_penalty: self.frequency_penalty,
            min_p: self.min_p,
        }
    }

    /// The serving engine's parameters for these flags and `logprobs` (the top-K of each step),
    /// or None where it has no knob for one of them yet: penalties, min-p (which changes sampled
    /// draws only: greedy ignores it), or more alternatives than `Op::Sample` returns.
    pub fn serve_params(&self, logprobs: Option<usize>) -> Option<SamplingParams> {
        let s = self.sampling();
        if s.has_penalties() || s.uses_min_p() || logprobs.is_some_and(|k| k > MAX_TOP_LOGPROBS) {
            return None;
        }
        Some(SamplingParams {
            temperature: s.temperature,
            top_k: s.top_k,
            top_p: s.top_p,
            seed: s.seed,
            logprobs,
        })
    }
}
