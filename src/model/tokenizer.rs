//! tokenizer.json through the `tokenizers` crate; the chat template from tokenizer_config.json
//! (or the GGUF's metadata), rendered by chat_template.rs.
pub use super::chat_template::{ChatMessage, ChatOptions};
use super::chat_template::{ChatTemplate, SPECIAL_TOKEN_NAMES};
use super::tokenizer_check::guarded;
use crate::error::{Error, Result};
use std::path::Path;

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    chat_template: Option<String>,
    /// The named special tokens a template sees (`bos_token`, `eos_token`, ...), those the model has.
    special: Vec<(String, String)>,
    /// The BOS id a prompt starts with when the model asks for one (`add_bos_token`).
    add_bos: Option<u32>,
    path: String,
    /// Bytes of the longest vocabulary entry (added tokens included), for `surely_longer_than`.
    longest_token_bytes: usize,
}

fn longest_token(t: &tokenizers::Tokenizer) -> usize {
    t.get_vocab(true).keys().map(|k| k.len()).max().unwrap_or(0)
}

fn token_str(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(o) => o.get("content").and_then(|c| c.as_str()).map(String::from),
        _ => None,
    }
}

impl Tokenizer {
    /// Loads `dir/tokenizer.json` (None when the directory has none) and the chat template.
    pub fn from_dir(dir: &Path) -> Result<Option<Tokenizer>> {
        let path = dir.join("tokenizer.json");
        if !path.exists() {
            return Ok(None);
        }
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| Error::File {
                path: p.display().to_string(),
                detail: e.to_string(),
            })
        };
        let json = read(&path)?;
        let cfg = dir.join("tokenizer_config.json");
        let cfg_bytes = if cfg.exists() { Some(read(&cfg)?) } else { None };
        Self::from_bytes(
            &path.display().to_string(),
            &json,
            cfg_bytes.as_deref().map(|b| (cfg.display().to_string(), b)),
        )
        .map(Some)
    }

    /// A tokenizer from the bytes of tokenizer.json (`path` names it in errors) and, when there is
    /// one, tokenizer_config.json (its name and bytes). tokenizer.json is checked before the
    /// tokenizers crate sees it and the crate runs under an unwind guard (tokenizer_check.rs).
    pub fn from_bytes(path: &str, json: &[u8], config: Option<(String, &[u8])>) -> Result<Tokenizer> {
        super::tokenizer_check::check_tokenizer_json(path, json)?;
        let inner = super::tokenizer_check::guarded(path, "loading", || tokenizers::Tokenizer::from_bytes(json))?
            .map_err(|e| Error::File {
                path: path.to_string(),
                detail: e.to_string(),
            })?;
        let (mut chat_template, mut special, mut add_bos) = (None, Vec::new(), false);
        if let Some((cp, bytes)) = config {
            let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| Error::File {
                path: cp.clone(),
                detail: format!("not valid JSON: {e}"),
            })?;
            let bad = |field: &str, want: &str| Error::File {
                path: cp.clone(),
                detail: format!("field `{field}`: expected {want}"),
            };
            if !v.is_object() {
                return Err(Error::File {
                    path: cp.clone(),
                    detail: "expected a JSON object".into(),
                });
            }
            chat_template = match v.get("chat_template") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(t)) => Some(t.clone()),
                // a list of named templates (transformers picks by name): not read, as before
                Some(serde_json::Value::Array(_)) => None,
                Some(_) => return Err(bad("chat_template", "a string or a list of named templates")),
            };
            for name in SPECIAL_TOKEN_NAMES {
                if let Some(t) = token_str(v.get(name)) {
                    special.push((name.to_string(), t));
                }
            }
            add_bos = match v.get("add_bos_token") {
                None | Some(serde_json::Value::Null) => false,
                Some(serde_json::Value::Bool(b)) => *b,
                Some(_) => return Err(bad("add_bos_token", "true or false")),
            };
        }
        let mut tk = Tokenizer {
            longest_token_bytes: longest_token(&inner),
            inner,
            chat_template,
            special,
            add_bos: None,
            path: path.to_string(),
        };
        if add_bos {
            tk.add_bos = tk.special_token("bos_token").and_then(|b| tk.token_id(b));
        }
        Ok(tk)
    }

    /// The tokenizer a GGUF file's metadata describes (byte-level BPE; see gguf_tokenizer.rs), the
    /// chat template from `tokenizer.chat_template`, bos/eos from their ids.
    pub fn from_gguf(g: &super::gguf::Gguf) -> Result<Tokenizer> {
        let inner = super::gguf_tokenizer::tokenizer_from_gguf(g)?;
        let chat_template = match g.meta("tokenizer.chat_template") {
            Some(_) => Some(g.meta_str("tokenizer.chat_template")?.to_string()),
            None => None,
        };
        let bos = super::gguf_tokenizer::token_of(g, "tokenizer.ggml.bos_token_id")?;
        // the special tokens transformers' GGUF loader names from these ids (integrations/ggml.py)
        let mut special = Vec::new();
        for (name, key) in [
            ("bos_token", "tokenizer.ggml.bos_token_id"),
            ("eos_token", "tokenizer.ggml.eos_token_id"),
            ("unk_token", "tokenizer.ggml.unknown_token_id"),
            ("pad_token", "tokenizer.ggml.padding_token_id"),
        ] {
            if let Some(t) = super::gguf_tokenizer::token_of(g, key)? {
                special.push((name.to_string(), t));
            }
        }
        // llama.cpp's rule: a gpt2-style vocabulary adds no BOS unless the file says so
        let add_bos = match g.meta("tokenizer.ggml.add_bos_token") {
            Some(_) if g.meta_bool("tokenizer.ggml.add_bos_token")? && bos.is_some() => {
                Some(g.meta_u32("tokenizer.ggml.bos_token_id")?)
            }
            _ => None,
        };
        Ok(Tokenizer {
            longest_token_bytes: longest_token(&inner),
            inner,
            chat_template,
            special,
            add_bos,
            path: g.path.display().to_string(),
        })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let e = guarded(&self.path, "encode", || self.inner.encode(text, false))?.map_err(|e| Error::File {
            path: self.path.clone(),
            detail: format!("encode: {e}"),
        })?;
        Ok(e.get_ids().to_vec())
    }

    /// Whether `text` surely takes more than `max_tokens` tokens, judged from its length in bytes
    /// before any tokenizing (so a huge rendered prompt is refused without tokenizing it all). A
    /// token stands for at most `longest` bytes of normalized text (the longest vocabulary entry,
    /// spelled in its own alphabet, which for byte-level BPE is never shorter than the bytes it
    /// stands for; at least 64, for unknown-character runs), and normalizing shrinks a character
    /// at most fourfold (a 4-byte character to 1 byte, NFKC's worst). The bound is generous, not
    /// exact: text under it is tokenized and counted exactly by the caller. (A normalizer that
    /// deletes characters outright could make the bound refuse a prompt that fits; none of the
    /// families this engine runs has one.)
    pub fn surely_longer_than(&self, text: &str, max_tokens: usize) -> bool {
        let budget = max_tokens
            .saturating_add(1)
            .saturating_mul(self.longest_token_bytes.max(64))
            .saturating_mul(4);
        text.len() > budget
    }

    /// `encode_prompt`, refused before tokenizing when the text surely takes more than
    /// `max_tokens` tokens (`surely_longer_than`); the exact count is the caller's to check.
    pub fn encode_prompt_max(&self, text: &str, max_tokens: usize) -> Result<Vec<u32>> {
        if self.surely_longer_than(text, max_tokens) {
            return Err(Error::Other(format!(
                "prompt too long: {} bytes of text take more than the context of {max_tokens} tokens \
                 (judged before tokenizing); shorten it or raise --ctx",
                text.len()
            )));
        }
        self.encode_prompt(text)
    }

    /// A prompt's ids: `encode`, with the BOS id in front when the model asks for one and the text
    /// (a chat template's output, say) does not already start with it.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = self.encode(text)?;
        if let Some(b) = self.add_bos {
            if ids.first() != Some(&b) {
                ids.insert(0, b);
            }
        }
        Ok(ids)
    }

    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        guarded(&self.path, "decode", || self.inner.decode(ids, true))?.map_err(|e| Error::File {
            path: self.path.clone(),
            detail: format!("decode: {e}"),
        })
    }

    /// The vocabulary's spelling of `id` (before decoding).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn token_id(&self, s: &str) -> Option<u32> {
        self.inner.token_to_id(s)
    }

    /// The prompt for one user message through the model's chat template.
    pub fn apply_chat(&self, user: &str) -> Result<String> {
        let msgs = [ChatMessage::new("user", user)];
        self.apply_chat_template(
            &msgs,
            &ChatOptions {
                add_generation_prompt: true,
                ..ChatOptions::default()
            },
        )
    }

    /// A conversation through the model's chat template, as transformers' `apply_chat_template`
    /// renders it (`tokenize=False`).
    pub fn apply_chat_template(&self, messages: &[ChatMessage], opts: &ChatOptions) -> Result<String> {
        self.chat_template()?.render(messages, opts)
    }

    /// The model's chat template with its special tokens (parsed on each call: a template that does
    /// not parse fails chat, not loading).
    pub fn chat_template(&self) -> Result<ChatTemplate> {
        let src = self.chat_template.as_ref().ok_or_else(|| Error::File {
            path: self.path.clone(),
            detail: "no chat_template in tokenizer_config.json".into(),
        })?;
        let mut t = ChatTemplate::new(&self.path, src)?;
        for (k, v) in &self.special {
            t = t.with_token(k, Some(v));
        }
        Ok(t)
    }

    /// A named special token's text (`bos_token`, `eos_token`, ...), when the model has it.
    pub fn special_token(&self, name: &str) -> Option<&str> {
        self.special.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}
