//! The embedded default model: the tiny random-weight Qwen3 of goldens/qwen3-tiny, compiled into
//! the binary so `wgllm run` works with no download. Written once to a cache directory.
use crate::error::{Error, Result};
use std::path::PathBuf;

const FILES: [(&str, &[u8]); 5] = [
    (
        "config.json",
        include_bytes!("../../goldens/qwen3-tiny/model/config.json"),
    ),
    (
        "generation_config.json",
        include_bytes!("../../goldens/qwen3-tiny/model/generation_config.json"),
    ),
    (
        "model.safetensors",
        include_bytes!("../../goldens/qwen3-tiny/model/model.safetensors"),
    ),
    (
        "tokenizer.json",
        include_bytes!("../../goldens/qwen3-tiny/model/tokenizer.json"),
    ),
    (
        "tokenizer_config.json",
        include_bytes!("../../goldens/qwen3-tiny/model/tokenizer_config.json"),
    ),
];

/// The directory holding the default model (created on first use).
pub fn dir() -> Result<PathBuf> {
    let h = FILES.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, (_, b)| {
        b.iter().fold(h, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01b3))
    });
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let d = base.join("wgllm").join(format!("qwen3-tiny-{:016x}", h));
    let io = |e: std::io::Error| Error::File {
        path: d.display().to_string(),
        detail: e.to_string(),
    };
    if !d.join("model.safetensors").exists() {
        std::fs::create_dir_all(&d).map_err(io)?;
        for (name, bytes) in FILES {
            let tmp = d.join(format!("{name}.tmp"));
            std::fs::write(&tmp, bytes).map_err(io)?;
            std::fs::rename(&tmp, d.join(name)).map_err(io)?;
        }
    }
    Ok(d)
}
