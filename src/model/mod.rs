//! Loading models as users have them: config.json, safetensors, tokenizer.
pub mod arch;
pub mod config;
pub mod default;
pub mod gguf;
pub mod gguf_config;
pub mod gguf_tokenizer;
pub mod qwen3;
pub mod qwen3_5;
pub mod safetensors;
pub mod shapes;
pub mod source;
pub mod tokenizer;
