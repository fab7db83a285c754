//! `wgllm run`'s checks, all made before any weights load: each flag's range (clap value parsers,
//! so a bad value is refused with the flag's name and its allowed range), the flags that only
//! make sense together, the prompt, and what `--model` names.
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// What a model directory must hold, for the messages about `--model`.
pub const MODEL_DIR_HOLDS: &str = "a model directory holds config.json, the weights (*.safetensors) and \
     tokenizer.json (a Hugging Face checkpoint), or one .gguf file; --model may also name a .gguf file";

/// A parser for an integer flag that must be at least `min`.
pub fn int_at_least(flag: &'static str, min: i64) -> impl Fn(&str) -> std::result::Result<usize, String> + Clone {
    move |s: &str| {
        let range = format!("{flag} must be an integer >= {min}");
        match s.trim().parse::<i128>() {
            Ok(v) if v >= min as i128 => usize::try_from(v).map_err(|_| format!("{range}, at most {}", usize::MAX)),
            Ok(_) => Err(format!("{range}, got {s}")),
            Err(_) => Err(format!("{range}, got `{s}`")),
        }
    }
}

fn number(flag: &str, range: &str, s: &str) -> std::result::Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("{flag} must be a number {range}, got `{s}`")),
    }
}

pub fn temperature(s: &str) -> std::result::Result<f32, String> {
    let range = ">= 0 (0 = greedy)";
    match number("--temperature", range, s)? {
        v if v >= 0.0 => Ok(v),
        _ => Err(format!("--temperature must be a number {range}, got {s}")),
    }
}

pub fn top_p(s: &str) -> std::result::Result<f32, String> {
    let range = "in (0, 1]: 0 < top-p <= 1 (1 = off)";
    match number("--top-p", range, s)? {
        v if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!("--top-p must be a number {range}, got {s}")),
    }
}

pub fn repetition_penalty(s: &str) -> std::result::Result<f32, String> {
    let range = "> 0 (1 = off)";
    match number("--repetition-penalty", range, s)? {
        v if v > 0.0 => Ok(v),
        _ => Err(format!("--repetition-penalty must be a number {range}, got {s}")),
    }
}

/// A parser for a presence or frequency penalty: in [-2, 2], as the OpenAI API allows.
pub fn penalty(flag: &'static str) -> impl Fn(&str) -> std::result::Result<f32, String> + Clone {
    move |s: &str| {
        let range = "in [-2, 2]: -2 <= value <= 2 (0 = off)";
        match number(flag, range, s)? {
            v if (-2.0..=2.0).contains(&v) => Ok(v),
            _ => Err(format!("{flag} must be a number {range}, got {s}")),
        }
    }
}

pub fn min_p(s: &str) -> std::result::Result<f32, String> {
    let range = "in [0, 1]: 0 <= min-p <= 1 (0 = off)";
    match number("--min-p", range, s)? {
        v if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("--min-p must be a number {range}, got {s}")),
    }
}

pub fn seed(s: &str) -> std::result::Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("--seed must be an integer in 0..={}, got `{s}`", u64::MAX))
}

/// Where the prompt comes from, checked before loading.
pub enum Prompt {
    Text(String),
    Chat(String),
    Ids(Vec<u32>),
}

pub fn parse_ids(s: &str) -> Result<Vec<u32>> {
    let ids = s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<u32>()
                .map_err(|_| Error::Other(format!("--tokens: `{t}` is not a token id (an integer >= 0)")))
        })
        .collect::<Result<Vec<u32>>>()?;
    if ids.is_empty() {
        return Err(Error::Other("--tokens: no token ids given".into()));
    }
    Ok(ids)
}

/// The flags that only make sense together, and the prompt.
pub fn flags(
    prompt: &Option<String>,
    chat: &Option<String>,
    tokens: &Option<String>,
    stop: &[String],
    json: bool,
    logprobs: Option<usize>,
) -> Result<Prompt> {
    if logprobs.is_some() && !json {
        return Err(Error::Other(
            "--logprobs needs --json (the logprobs are printed in the JSON object; streamed text has no place for them)"
                .into(),
        ));
    }
    if stop.iter().any(|s| s.is_empty()) {
        return Err(Error::Other(
            "--stop must not be empty (it would stop before the first token)".into(),
        ));
    }
    Ok(match (prompt, chat, tokens) {
        (_, _, Some(ids)) => Prompt::Ids(parse_ids(ids)?),
        (Some(p), _, _) => Prompt::Text(p.clone()),
        (_, Some(c), _) => Prompt::Chat(c.clone()),
        _ => {
            return Err(Error::Other(
                "no prompt: give one of --prompt TEXT, --chat TEXT or --tokens IDS".into(),
            ))
        }
    })
}

/// The path to load for `--model`: a .gguf file, a Hugging Face directory, or the one .gguf in a
/// directory without config.json. `needs_tokenizer`: the prompt is text, so a Hugging Face
/// directory must have tokenizer.json.
pub fn model(p: &Path, needs_tokenizer: bool) -> Result<PathBuf> {
    let bad = |what: String| Error::Other(format!("--model {}: {what}; {MODEL_DIR_HOLDS}", p.display()));
    if !p.exists() {
        return Err(bad("no such file or directory".into()));
    }
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    if p.join("config.json").is_file() {
        if needs_tokenizer && !p.join("tokenizer.json").is_file() {
            return Err(Error::Other(format!(
                "--model {}: no tokenizer.json, so the prompt cannot be text; give it with --tokens IDS",
                p.display()
            )));
        }
        return Ok(p.to_path_buf());
    }
    let entries = std::fs::read_dir(p).map_err(|e| bad(format!("cannot list it ({e})")))?;
    let mut ggufs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "gguf"))
        .collect();
    ggufs.sort();
    match ggufs.len() {
        0 => Err(bad("holds neither config.json nor a .gguf file".into())),
        1 => Ok(ggufs.remove(0)),
        _ => Err(Error::Other(format!(
            "--model {}: holds {} .gguf files ({}); name one of them with --model",
            p.display(),
            ggufs.len(),
            ggufs
                .iter()
                .map(|f| f.file_name().unwrap_or_default().to_string_lossy())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// How many tokens to generate: `n`, or fewer when the context fills first (then `true`).
pub fn fit(n: usize, prompt_len: usize, ctx: usize, ctx_flag: usize) -> Result<(usize, bool)> {
    if prompt_len >= ctx {
        let capped = if ctx < ctx_flag {
            " (the model's max_position_embeddings)"
        } else {
            " (--ctx)"
        };
        return Err(Error::Other(format!(
            "the prompt is {prompt_len} tokens and the context holds {ctx}{capped}: no room to generate; \
             raise --ctx or shorten the prompt"
        )));
    }
    let room = ctx - prompt_len;
    Ok(if n > room { (room, true) } else { (n, false) })
}
