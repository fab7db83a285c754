//! The hip/ kernel sources (embedded at build time), the text a runtime compiler gets, and the
//! on-disk kernel cache keyed by that text's hash and the target arch.
//!
//! The compiled text is: [the CUDA prelude, for NVRTC] + `#define T_X wg_bf16` lines + the .hip
//! file with `#include "wgllm_hip.h"` replaced by the header itself. So the hash covers every
//! byte the compiler sees. `WGLLM_HIP_DIR=DIR` reads the sources from DIR at run time instead
//! (for kernel work without rebuilding, and for showing that a broken kernel goes red).
use super::ModuleKey;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

pub const HEADER: &str = include_str!("../../../hip/wgllm_hip.h");
pub const CUDA_PRELUDE: &str = include_str!("../../../hip/cuda_prelude.h");

/// Every kernel file under hip/, by name.
pub const FILES: &[(&str, &str)] = &[
    ("add_rms_norm.hip", include_str!("../../../hip/add_rms_norm.hip")),
    ("argmax.hip", include_str!("../../../hip/argmax.hip")),
    ("attention.hip", include_str!("../../../hip/attention.hip")),
    ("causal_conv1d.hip", include_str!("../../../hip/causal_conv1d.hip")),
    (
        "causal_conv1d_batch.hip",
        include_str!("../../../hip/causal_conv1d_batch.hip"),
    ),
    ("convert.hip", include_str!("../../../hip/convert.hip")),
    ("elementwise.hip", include_str!("../../../hip/elementwise.hip")),
    ("embedding.hip", include_str!("../../../hip/embedding.hip")),
    ("embedding_shard.hip", include_str!("../../../hip/embedding_shard.hip")),
    ("gated_attention.hip", include_str!("../../../hip/gated_attention.hip")),
    ("gdn.hip", include_str!("../../../hip/gdn.hip")),
    ("gdn_chunked.hip", include_str!("../../../hip/gdn_chunked.hip")),
    ("gemm.hip", include_str!("../../../hip/gemm.hip")),
    ("kv_write.hip", include_str!("../../../hip/kv_write.hip")),
    ("matvec.hip", include_str!("../../../hip/matvec.hip")),
    ("min_p.hip", include_str!("../../../hip/min_p.hip")),
    ("paged_attention.hip", include_str!("../../../hip/paged_attention.hip")),
    ("penalties.hip", include_str!("../../../hip/penalties.hip")),
    ("quant.hip", include_str!("../../../hip/quant.hip")),
    ("rms_norm.hip", include_str!("../../../hip/rms_norm.hip")),
    ("rms_norm_gated.hip", include_str!("../../../hip/rms_norm_gated.hip")),
    ("rms_norm_rope.hip", include_str!("../../../hip/rms_norm_rope.hip")),
    ("rope.hip", include_str!("../../../hip/rope.hip")),
    ("sample.hip", include_str!("../../../hip/sample.hip")),
    ("softmax.hip", include_str!("../../../hip/softmax.hip")),
    ("topk.hip", include_str!("../../../hip/topk.hip")),
];

/// The embedded text of hip/`name`.
pub fn file(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// hip/`name` from `WGLLM_HIP_DIR` when set, else the embedded copy.
fn read(name: &str) -> Result<String, String> {
    match std::env::var_os("WGLLM_HIP_DIR") {
        Some(dir) => {
            let p = PathBuf::from(dir).join(name);
            std::fs::read_to_string(&p).map_err(|e| format!("WGLLM_HIP_DIR: {}: {e}", p.display()))
        }
        None => match name {
            "wgllm_hip.h" => Ok(HEADER.to_string()),
            "cuda_prelude.h" => Ok(CUDA_PRELUDE.to_string()),
            _ => file(name)
                .map(str::to_string)
                .ok_or_else(|| format!("no kernel source hip/{name}")),
        },
    }
}

/// The full text to compile for `m`, with the CUDA prelude when `cuda`.
pub fn text(m: &ModuleKey, cuda: bool) -> Result<String, String> {
    let body = read(m.file)?;
    let header = read("wgllm_hip.h")?;
    let mut s = String::new();
    if cuda {
        s.push_str("#line 1 \"cuda_prelude.h\"\n");
        s.push_str(&read("cuda_prelude.h")?);
        s.push('\n');
    }
    for (k, v) in &m.defines {
        s.push_str(&format!("#define {k} {v}\n"));
    }
    let mut found = false;
    for (n, line) in body.lines().enumerate() {
        if line.trim() == "#include \"wgllm_hip.h\"" && !found {
            found = true;
            s.push_str("#line 1 \"wgllm_hip.h\"\n");
            for h in header.lines().filter(|l| l.trim() != "#pragma once") {
                s.push_str(h);
                s.push('\n');
            }
            s.push_str(&format!("#line {} \"{}\"\n", n + 2, m.file));
        } else {
            if n == 0 {
                s.push_str(&format!("#line 1 \"{}\"\n", m.file));
            }
            s.push_str(line);
            s.push('\n');
        }
    }
    if !found {
        return Err(format!("hip/{} does not include \"wgllm_hip.h\"", m.file));
    }
    Ok(s)
}

/// Hex sha256 of everything that determines a compiled image.
pub fn key(text: &str, arch: &str, compiler: &str) -> String {
    let mut h = Sha256::new();
    for part in [text, "\0", arch, "\0", compiler] {
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `$XDG_CACHE_HOME/wgllm/kernels` (else `~/.cache/wgllm/kernels`); `WGLLM_KERNEL_CACHE` overrides.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("WGLLM_KERNEL_CACHE") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wgllm").join("kernels"))
}

/// A cached image, if present.
pub fn cache_get(key: &str, ext: &str) -> Option<Vec<u8>> {
    std::fs::read(cache_dir()?.join(format!("{key}.{ext}")))
        .ok()
        .filter(|b| !b.is_empty())
}

/// Stores an image (atomically: a temp file renamed into place). A cache that cannot be written
/// only costs a recompile next time.
pub fn cache_put(key: &str, ext: &str, image: &[u8]) {
    let Some(dir) = cache_dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let tmp = dir.join(format!("{key}.{ext}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, image).is_ok() {
        let _ = std::fs::rename(&tmp, dir.join(format!("{key}.{ext}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_inlines_the_header_and_defines() {
        let m = ModuleKey {
            file: "rms_norm.hip",
            defines: vec![("T_X", "wg_bf16")],
        };
        let t = text(&m, true).unwrap();
        assert!(t.starts_with("#line 1 \"cuda_prelude.h\""));
        assert!(t.contains("#define T_X wg_bf16\n"));
        assert!(t.contains("WG_DEV float wg_f16_to_f32"));
        assert!(!t.contains("#include \"wgllm_hip.h\""));
        assert!(!t.contains("#pragma once"));
        let plain = text(&m, false).unwrap();
        assert!(!plain.contains("WGLLM_CUDA 1"));
        assert_ne!(key(&t, "sm_90", "nvrtc 13.0"), key(&plain, "sm_90", "nvrtc 13.0"));
    }

    #[test]
    fn every_hip_file_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/hip");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".hip"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(on_disk, embedded);
    }
}
