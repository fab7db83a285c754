//! Named real model shapes, for benchmarks with random weights (`wgllm bench --shape NAME`).
use super::config::{Config, HybridConfig, LayerType};

pub const NAMES: [&str; 2] = ["qwen3-0.6b", "qwen3.5-0.8b"];

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
            qk_norm: true,
            rope_scaling: None,
            hybrid: None,
        }),
        // Qwen/Qwen3.5-0.8B config.json, text_config (read through public mirrors of the file:
        // the vision-language checkpoint's text model). 24 layers, [3 x linear, full] x 6; full
        // attention 8 q / 2 kv heads of 256 with rotary 64 (partial_rotary_factor 0.25) and the
        // output gate; Gated DeltaNet 16 key / 16 value heads of 128, conv kernel 4. Tied embeddings.
        "qwen3.5-0.8b" => Some(Config {
            model_type: "qwen3_5_text".into(),
            hidden_size: 1024,
            intermediate_size: 3584,
            num_hidden_layers: 24,
            num_attention_heads: 8,
            num_key_value_heads: 2,
            head_dim: 256,
            rms_norm_eps: 1e-6,
            rope_theta: 10_000_000.0,
            vocab_size: 248_320,
            max_position_embeddings: 262_144,
            tie_word_embeddings: true,
            eos_token_ids: vec![248_044],
            bos_token_id: None,
            qk_norm: true,
            rope_scaling: None,
            hybrid: Some(HybridConfig {
                layer_types: (0..24)
                    .map(|i| if i % 4 == 3 { LayerType::Full } else { LayerType::Linear })
                    .collect(),
                linear_num_key_heads: 16,
                linear_num_value_heads: 16,
                linear_key_head_dim: 128,
                linear_value_head_dim: 128,
                linear_conv_kernel_dim: 4,
                rotary_dim: 64,
            }),
        }),
        _ => None,
    }
}
