//! Named real model shapes, for benchmarks with random weights (`wgllm bench --shape NAME`).
use super::config::Config;

pub const NAMES: [&str; 1] = ["qwen3-0.6b"];

pub fn shape(name: &str) -> Option<Config> {
    match name {
        // Qwen/Qwen3-0.6B config.json
        "qwen3-0.6b" => Some(Config {
            model_type: "qwen3".into(),
            hidden_size: 1024,
            intermediate_size: 3072,
            num_hidden_layers: 28,
            num_attention_heads: 16,
            num_key_value_heads: 8,
            head_dim: 128,
            rms_norm_eps: 1e-6,
            rope_theta: 1_000_000.0,
            vocab_size: 151_936,
            max_position_embeddings: 40_960,
            tie_word_embeddings: true,
            eos_token_ids: vec![151_645],
            bos_token_id: None,
        }),
        _ => None,
    }
}
