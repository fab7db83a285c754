//! The model gate, per golden case and device:
//! - greedy: 16 prompts x 16 greedy tokens through the full engine. Tokens must equal the committed
//!   anchor for the device exactly; against the oracle, the first divergence (if any) must be a
//!   near-tie: logprob(oracle's token) - logprob(ours) <= near_tie_nats in the oracle's top-20.
//! - teacher_forced: our logprobs of the oracle's top-20 at every position, within tolerance.
//! - hidden: the residual stream after the embedding and after each decoder layer, within tolerance.
use super::golden::Manifest;
use crate::dtype::DType;
use crate::engine::sampler::{log_softmax, Sampler, Sampling};
use crate::engine::Engine;
use crate::model::safetensors::SafeTensors;
use crate::model::Logits;
use std::path::{Path, PathBuf};

pub const REGRESSION: &str = "REGRESSION SUSPECTED — bisect first";

/// Where a golden case's model is: `goldens/<case>/model`, or, for a case whose manifest names a
/// `model_file` (a real model too large for the repository), `$WGLLM_MODELS/<name>` (default
/// `<repo>/target/models`), checked against the manifest's sha256. Err says why it is not there
/// (the caller decides whether that skips or fails).
pub fn model_path(m: &Manifest, repo: &Path) -> Result<PathBuf, String> {
    let Some(mf) = m.json.get("model_file") else {
        return Ok(m.dir.join("model"));
    };
    let name = mf
        .get("name")
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("{}: model_file.name missing", m.case))?;
    let sha = mf
        .get("sha256")
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("{}: model_file.sha256 missing", m.case))?;
    let source = mf.get("source").and_then(|v| v.as_str()).unwrap_or("?");
    let dir = std::env::var_os("WGLLM_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target/models"));
    let path = dir.join(name);
    if !path.exists() {
        return Err(format!(
            "model file {} is absent (from {source}; set WGLLM_MODELS or run .ci/fetch-models)",
            path.display()
        ));
    }
    let got = super::golden::sha256_file(&path)?;
    if got != sha {
        return Err(format!(
            "model file {}: sha256 {got} differs from the manifest's {sha}",
            path.display()
        ));
    }
    Ok(path)
}

struct Golden {
    st: SafeTensors,
}

impl Golden {
    fn open(m: &Manifest, file: &str) -> Result<Golden, String> {
        let mut st = SafeTensors {
            files: Vec::new(),
            tensors: Default::default(),
        };
        st.add_file(&m.dir.join(file)).map_err(|e| e.to_string())?;
        Ok(Golden { st })
    }
    fn ints(&self, name: &str) -> Result<(Vec<u32>, Vec<usize>), String> {
        let (info, b) = self.st.get(name).map_err(|e| e.to_string())?;
        if info.dtype != DType::I32 {
            return Err(format!("golden tensor {name} is {} not i32", info.dtype));
        }
        Ok((DType::I32.decode_u32(b), info.shape.clone()))
    }
    fn floats(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>), String> {
        let (info, b) = self.st.get(name).map_err(|e| e.to_string())?;
        Ok((info.dtype.decode_f32(b), info.shape.clone()))
    }
}

fn tol(m: &Manifest, k: &str, default: f64) -> f64 {
    m.json
        .get("tolerance")
        .and_then(|t| t.get(k))
        .and_then(|v| v.as_f64())
        .unwrap_or(default)
}

pub fn anchor_path(root: &Path, case: &str, device: &str) -> std::path::PathBuf {
    root.join(case).join(format!("{}.json", device.replace('/', "-")))
}

/// The greedy gate. With `bless`, writes the anchor (only after the oracle check passes).
pub fn greedy(m: &Manifest, e: &mut Engine, anchors: &Path, bless: bool) -> Result<String, String> {
    let (ours, summary) = greedy_with(m, None, &mut |prompts, nn| {
        let mut out = Vec::new();
        for (p, prompt) in prompts.iter().enumerate() {
            let mut sampler = Sampler::new(Sampling::default());
            let steps = e
                .generate(prompt, nn, &mut sampler, None, false, &mut |_| true)
                .map_err(|er| format!("prompt {p}: {er}"))?;
            out.push(steps.iter().map(|s| s.token).collect());
        }
        Ok(out)
    })?;
    check_anchor(anchors, &m.case, &e.dev.name(), &ours, bless, false)?;
    Ok(summary)
}

/// The greedy battery's prompts (and how many tokens each generates) through `generate`, checked
/// against the oracle: the first divergence of each prompt, if any, must be a near-tie. Returns our
/// tokens and a summary.
pub fn greedy_with(
    m: &Manifest,
    part: Option<(usize, usize)>,
    generate: &mut dyn FnMut(&[Vec<u32>], usize) -> Result<Vec<Vec<u32>>, String>,
) -> Result<(Vec<Vec<u32>>, String), String> {
    let g = Golden::open(m, "greedy.safetensors")?;
    let (tokens, ts) = g.ints("tokens")?;
    let (top_ids, _) = g.ints("top_ids")?;
    let (top_lp, _) = g.floats("top_logprobs")?;
    let (np, nn) = (ts[0], ts[1]);
    let k = top_lp.len() / (np * nn);
    let band = tol(m, "near_tie_nats", 0.5);
    // `part`: the first P prompts, T tokens each (a slow device's shorter battery)
    let nn_all = nn;
    let (np, nn_used) = part.map_or((np, nn), |(p, t)| (p.min(np), t.min(nn)));
    let prompts = (0..np)
        .map(|p| g.ints(&format!("prompt_{p:02}")).map(|x| x.0))
        .collect::<Result<Vec<_>, _>>()?;
    let ours_all = generate(&prompts, nn_used)?;
    if ours_all.len() != np || ours_all.iter().any(|o| o.len() != nn_used) {
        return Err(format!(
            "generated {} prompts' tokens, want {np} x {nn_used}",
            ours_all.len()
        ));
    }

    let (mut diverged, mut worst_gap) = (0, 0f64);
    for (p, ours) in ours_all.iter().enumerate() {
        let prompt = &prompts[p];
        if let Some(i) = (0..nn_used).find(|&i| ours[i] != tokens[p * nn_all + i]) {
            let base = (p * nn + i) * k;
            let oracle_tok = tokens[p * nn + i];
            let lp_top = top_lp[base] as f64;
            let Some(j) = (0..k).find(|&j| top_ids[base + j] == ours[i]) else {
                return Err(format!(
                    "prompt {p} (len {}) position {i}: our token {} is outside the oracle's top-{k} (oracle chose {oracle_tok}): a real divergence. {REGRESSION}",
                    prompt.len(),
                    ours[i]
                ));
            };
            let gap = lp_top - top_lp[base + j] as f64;
            if gap > band {
                return Err(format!(
                    "prompt {p} (len {}) position {i}: our token {} is {gap:.3} nats below the oracle's {oracle_tok} (band {band}). {REGRESSION}",
                    prompt.len(),
                    ours[i]
                ));
            }
            diverged += 1;
            worst_gap = worst_gap.max(gap);
        }
    }
    let summary = format!(
        "{np} prompts x {nn_used} tokens; {diverged} near-tie divergences from the oracle (worst {worst_gap:.3} nats)"
    );
    Ok((ours_all, summary))
}

/// `ours` against the device's committed anchor (with `bless`: records it instead). With `part`,
/// `ours` may be the anchor's first prompts and tokens only.
pub fn check_anchor(
    anchors: &Path,
    case: &str,
    device: &str,
    ours_all: &[Vec<u32>],
    bless: bool,
    part: bool,
) -> Result<(), String> {
    let path = anchor_path(anchors, case, device);
    if bless {
        std::fs::create_dir_all(path.parent().unwrap()).map_err(|er| er.to_string())?;
        let j = serde_json::json!({"case": case, "device": device, "tokens": ours_all});
        std::fs::write(&path, serde_json::to_string(&j).unwrap() + "\n").map_err(|er| er.to_string())?;
        return Ok(());
    }
    let text = std::fs::read_to_string(&path).map_err(|_| {
        format!(
            "no anchor {} for device {device}: record one with WGLLM_BLESS=1 (after this oracle check passes)",
            path.display(),
        )
    })?;
    let j: serde_json::Value = serde_json::from_str(&text).map_err(|er| format!("{}: {er}", path.display()))?;
    let anchor: Vec<Vec<u32>> =
        serde_json::from_value(j["tokens"].clone()).map_err(|er| format!("{}: {er}", path.display()))?;
    for (p, (a, o)) in anchor.iter().zip(ours_all).enumerate() {
        let len = if part { o.len() } else { a.len().max(o.len()) };
        if let Some(i) = (0..len).find(|&i| a.get(i) != o.get(i)) {
            return Err(format!(
                "prompt {p} position {i}: token {:?} differs from the anchor's {:?} ({}). {REGRESSION}",
                o.get(i),
                a.get(i),
                path.display()
            ));
        }
    }
    if anchor.len() != ours_all.len() && !(part && ours_all.len() < anchor.len()) {
        return Err(format!(
            "anchor {} holds {} prompts, the golden {}",
            path.display(),
            anchor.len(),
            ours_all.len()
        ));
    }
    Ok(())
}

/// Teacher-forced logprobs of the oracle's top-k at every position.
pub fn teacher_forced(m: &Manifest, e: &mut Engine) -> Result<String, String> {
    let g = Golden::open(m, "teacher_forced.safetensors")?;
    let limit = tol(m, "tf_logprob_max_abs", 1e-3);
    let (mut n, mut worst) = (0usize, 0f64);
    for s in 0.. {
        let Ok((seq, _)) = g.ints(&format!("seq_{s}")) else {
            break;
        };
        let (ids, shape) = g.ints(&format!("top_ids_{s}"))?;
        let (lps, _) = g.floats(&format!("top_logprobs_{s}"))?;
        let k = shape[1];
        let mut cache = e.new_cache().map_err(|er| er.to_string())?;
        e.forward(&mut cache, &seq, Logits::All, &mut |_, _, _| Ok(()))
            .map_err(|er| er.to_string())?;
        let logits = e.logits(seq.len(), seq.len()).map_err(|er| er.to_string())?;
        let v = e.cfg.vocab_size;
        for pos in 0..seq.len() {
            let lp = log_softmax(&logits[pos * v..(pos + 1) * v]);
            for j in 0..k {
                let d = (lp[ids[pos * k + j] as usize] - lps[pos * k + j] as f64).abs();
                worst = worst.max(d);
                n += 1;
                if d > limit {
                    return Err(format!(
                        "sequence {s} (len {}) position {pos}: logprob of token {} is {:.5}, oracle {:.5} (|diff| {d:.2e} > {limit:.0e}). {REGRESSION}",
                        seq.len(),
                        ids[pos * k + j],
                        lp[ids[pos * k + j] as usize],
                        lps[pos * k + j]
                    ));
                }
            }
        }
    }
    if n == 0 {
        return Err("teacher-forced gate compared nothing".into());
    }
    Ok(format!("{n} logprobs compared, max |diff| {worst:.2e}"))
}

/// The residual stream after the embedding and after each decoder layer.
pub fn hidden(m: &Manifest, e: &mut Engine) -> Result<String, String> {
    let g = Golden::open(m, "hidden.safetensors")?;
    let p = m.json["args"]["hidden_prompt"]
        .as_u64()
        .ok_or("manifest args.hidden_prompt missing")?;
    let gp = Golden::open(m, "greedy.safetensors")?;
    let (prompt, _) = gp.ints(&format!("prompt_{p:02}"))?;
    let (want, shape) = g.floats("hidden")?;
    let limit = tol(m, "hidden_max_abs", 1e-3);
    // relative part for real models' outlier dims (0 for the tiny goldens, which do not set it)
    let rel = tol(m, "hidden_max_rel", 0.0);
    let per = shape[1] * shape[2];
    let mut got: Vec<Vec<f32>> = Vec::new();
    let mut cache = e.new_cache().map_err(|er| er.to_string())?;
    e.forward(&mut cache, &prompt, Logits::Last, &mut |_, dev, x| {
        got.push(DType::F32.decode_f32(&dev.download(x)?));
        Ok(())
    })
    .map_err(|er| er.to_string())?;
    if got.len() != shape[0] {
        return Err(format!(
            "captured {} hidden states, the golden has {}",
            got.len(),
            shape[0]
        ));
    }
    let mut worst = 0f64;
    for (i, h) in got.iter().enumerate() {
        for (j, (&a, &b)) in h.iter().zip(&want[i * per..(i + 1) * per]).enumerate() {
            let d = (a as f64 - b as f64).abs();
            let bound = limit + rel * (b as f64).abs();
            if d.is_nan() || d > bound {
                let what = if i == 0 {
                    "embedding output".to_string()
                } else {
                    format!("layer {} output", i - 1)
                };
                return Err(format!("{what}, token {}, dim {}: {a} vs oracle {b} (|diff| {d:.3e} > {limit:.0e} + {rel:.0e} x |oracle|). {REGRESSION}", j / shape[2], j % shape[2]));
            }
            worst = worst.max(d / bound);
        }
    }
    Ok(format!(
        "{} hidden states x {per} values, worst |diff| at {:.1}% of its bound (abs {limit:.0e}, rel {rel:.0e})",
        got.len(),
        worst * 100.0
    ))
}
