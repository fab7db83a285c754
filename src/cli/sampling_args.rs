//! The sampling flags `run` and `chat` share, each checked by its value parser before any weights
//! load.
use super::run::check;
use crate::engine::sampler::Sampling;
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
}

impl SamplingArgs {
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            seed: self.seed,
        }
    }
}
