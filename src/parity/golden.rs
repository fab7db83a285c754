//! The golden walker: every `goldens/<case>/manifest.json` is parsed, every file it lists is checked
//! by sha256, and every manifest must have a runner in this crate (or sit in the pending list
//! goldens/PENDING, changed in the same commit as the manifest). The walk never stops at the first
//! bad manifest: each gets its own verdict.
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// (kind, model) pairs this crate can run. A manifest naming anything else fails the walk.
pub const RUNNERS: [(&str, &str); 10] = [
    ("model", "qwen3"),
    ("model", "qwen3_5"),
    // Llama (SmolLM2 from its GGUF file, quantized blocks on the device)
    ("model", "llama"),
    // GGUF block dequantization (tests/quant.rs runs these against src/quant/, bit-exact)
    ("dequant", "q8_0"),
    ("dequant", "q4_0"),
    ("dequant", "q4_1"),
    ("dequant", "q4_k"),
    ("dequant", "q6_k"),
    ("dequant", "iq4_nl"),
    // chat templates rendered by transformers (tests/chat_templates.rs renders them byte-equal)
    ("chat_template", "apply_chat_template"),
];

/// Whether the model gates run for this manifest (a model case with a runner).
pub fn has_model_gate(m: &Manifest) -> bool {
    m.kind == "model" && RUNNERS.contains(&("model", m.model.as_str()))
}

#[derive(Debug)]
pub struct Manifest {
    pub dir: PathBuf,
    pub case: String,
    pub kind: String,
    pub model: String,
    pub json: Value,
}

pub fn sha256_file(p: &Path) -> Result<String, String> {
    let b = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(format!("{:x}", Sha256::digest(&b)))
}

/// The manifests under `root` (sorted by path).
pub fn manifests(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path().join("manifest.json"))
                .filter(|p| p.exists())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Cases listed in `root/PENDING` (one per line, `#` comments): manifests allowed to lack a runner.
pub fn pending(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("PENDING"))
        .map(|s| {
            s.lines()
                .map(|l| l.split('#').next().unwrap().trim().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Parses and checks one manifest: required keys, every listed file present with its sha256,
/// every tensor's file listed, and a runner (or a pending entry) for its (kind, model).
pub fn check(path: &Path, pending: &[String]) -> Result<Manifest, String> {
    let at = |d: String| format!("{}: {d}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| at(e.to_string()))?;
    let json: Value = serde_json::from_str(&text).map_err(|e| at(format!("malformed manifest: {e}")))?;
    let s = |k: &str| {
        json.get(k)
            .and_then(|v| v.as_str())
            .map(String::from)
            .ok_or_else(|| at(format!("missing string field `{k}`")))
    };
    let kind = s("kind")?;
    let case = s("case")?;
    let model = if kind == "model" { s("model")? } else { s("op")? };
    let oracle = json
        .get("oracle")
        .and_then(|o| o.as_object())
        .ok_or_else(|| at("missing `oracle`".into()))?;
    for k in [
        "name",
        "version",
        "torch_version",
        "device",
        "dtype",
        "seed",
        "script",
        "script_sha256",
        "date",
    ] {
        if !oracle.contains_key(k) {
            return Err(at(format!("oracle.{k} missing")));
        }
    }
    let dir = path.parent().unwrap().to_path_buf();
    let files = json
        .get("files")
        .and_then(|f| f.as_object())
        .ok_or_else(|| at("missing `files`".into()))?;
    if files.is_empty() {
        return Err(at("`files` is empty".into()));
    }
    for (rel, sha) in files {
        let p = dir.join(rel);
        if !p.exists() {
            return Err(at(format!("listed file {rel} is missing")));
        }
        let got = sha256_file(&p).map_err(at)?;
        if Some(got.as_str()) != sha.as_str() {
            return Err(at(format!("{rel}: sha256 {got} differs from the manifest (goldens change only by a re-capture through tools/oracle)")));
        }
    }
    if let Some(t) = json.get("tensors").and_then(|t| t.as_object()) {
        for (name, info) in t {
            let f = info
                .get("file")
                .and_then(|f| f.as_str())
                .ok_or_else(|| at(format!("tensor {name}: no file")))?;
            if !files.contains_key(f) {
                return Err(at(format!("tensor {name}: file {f} is not in `files`")));
            }
        }
    }
    if !RUNNERS.contains(&(kind.as_str(), model.as_str())) && !pending.contains(&case) {
        return Err(at(format!(
            "no runner for ({kind}, {model}) and case `{case}` is not in goldens/PENDING"
        )));
    }
    Ok(Manifest {
        dir,
        case,
        kind,
        model,
        json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wgllm-golden-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    const ORACLE: &str = r#""oracle":{"name":"transformers","version":"x","torch_version":"x","device":"cpu","dtype":"float32","seed":0,"script":"s","script_sha256":"0","date":"d"}"#;
    #[test]
    fn malformed_missing_and_runnerless_manifests_fail_by_path() {
        let d = tmp("walk");
        std::fs::write(d.join("manifest.json"), "{oops").unwrap();
        let e = check(&d.join("manifest.json"), &[]).unwrap_err();
        assert!(e.contains("manifest.json") && e.contains("malformed"), "{e}");
        std::fs::write(d.join("data.bin"), b"abc").unwrap();
        let sha = sha256_file(&d.join("data.bin")).unwrap();
        let m = format!(r#"{{"kind":"model","model":"mamba","case":"c",{ORACLE},"files":{{"data.bin":"{sha}"}}}}"#);
        std::fs::write(d.join("manifest.json"), &m).unwrap();
        let e = check(&d.join("manifest.json"), &[]).unwrap_err();
        assert!(e.contains("no runner"), "{e}");
        assert!(check(&d.join("manifest.json"), &["c".into()]).is_ok());
        std::fs::write(d.join("data.bin"), b"abd").unwrap();
        let e = check(&d.join("manifest.json"), &["c".into()]).unwrap_err();
        assert!(e.contains("sha256"), "{e}");
        std::fs::remove_file(d.join("data.bin")).unwrap();
        let e = check(&d.join("manifest.json"), &["c".into()]).unwrap_err();
        assert!(e.contains("missing"), "{e}");
    }
}
