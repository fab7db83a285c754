//! A `tokenizers::Tokenizer` built from a GGUF file's `tokenizer.ggml.*` metadata, giving the same
//! ids as HF transformers gives for the same file (`AutoTokenizer.from_pretrained(dir,
//! gguf_file=...)`), since the golden prompts are tokenized there. Only byte-level BPE
//! (`tokenizer.ggml.model == "gpt2"`) is built; other tokenizer models are refused by name.
//!
//! What transformers builds for a `gpt2` file, and so what we build:
//! - BPE over the file's tokens and merges (no unk token, no byte fallback). A token spelled with
//!   characters outside the byte-level alphabet is respelled as the alphabet's spelling of its
//!   UTF-8 bytes.
//! - Pre-tokenizer: byte-level with the GPT-2 split regex, unless `tokenizer.ggml.pre` names a
//!   family with its own split regex (llama3-style, qwen2-style, qwen35), which then runs first and
//!   the byte-level step only maps bytes. A `pre` with a split we do not have is refused by name.
//! - Decoder: byte-level. No normalizer; no post-processor (we never add special tokens on encode).
//! - Added tokens, matched whole before BPE: every token of type 3 (control) spelled in the
//!   byte-level alphabet, plus the bos/eos/unk/pad tokens, as special; every token of type 4
//!   (user defined), as non-special. Transformers also adds `<|endoftext|>` (GPT-2's default) even
//!   where the vocabulary lacks it, giving it an id the model has no row for; we add it only where
//!   the vocabulary has it.
use super::gguf::Gguf;
use crate::error::{Error, Result};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// GPT-2's byte-level alphabet: byte -> the printable character standing for it. Printable
/// Latin-1 bytes stand for themselves; the rest take the characters from U+0100 on, in byte order.
pub fn byte_alphabet() -> [char; 256] {
    let mut out = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        out[b as usize] = if printable {
            b as char
        } else {
            let c = char::from_u32(next).unwrap();
            next += 1;
            c
        };
    }
    out
}

/// The split regex for a `tokenizer.ggml.pre` family: Ok(None) for the plain GPT-2 byte-level
/// split (what transformers uses for any name it has no split for, e.g. `smollm`, `gpt-2`).
fn split_regex(pre: &str) -> std::result::Result<Option<String>, String> {
    // The llama3/qwen2 family of splits: contractions, letters with one leading non-letter,
    // digits in groups, punctuation runs with trailing newlines, newline runs, spaces.
    let family = |letters: &str, not_letters: &str, digits: &str| {
        format!(
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{{L}}\\p{{N}}]?{letters}+|\\p{{N}}{digits}| ?[^\\s{not_letters}\\p{{N}}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
        )
    };
    Ok(Some(match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0" | "lfm2"
        | "jina-v5-nano" | "dbrx" | "smaug-bpe" => family("\\p{L}", "\\p{L}", "{1,3}"),
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" => family("\\p{L}", "\\p{L}", ""),
        "qwen35" => family("[\\p{L}\\p{M}]", "\\p{L}\\p{M}", ""),
        "tekken" | "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => {
            return Err(format!(
                "tokenizer.ggml.pre `{pre}` (its own split regex) is not supported yet"
            ))
        }
        _ => return Ok(None),
    }))
}

fn id_token<'a>(g: &Gguf, tokens: &[&'a str], key: &str) -> Result<Option<&'a str>> {
    if g.meta(key).is_none() {
        return Ok(None);
    }
    let id = g.meta_u32(key)?;
    let t = tokens.get(id as usize).ok_or_else(|| {
        g_err(
            g,
            format!(
                "metadata key `{key}`: id {id} is past the vocabulary ({} tokens)",
                tokens.len()
            ),
        )
    })?;
    Ok(Some(t))
}

fn g_err(g: &Gguf, detail: impl Into<String>) -> Error {
    Error::File {
        path: g.path.display().to_string(),
        detail: detail.into(),
    }
}

/// The tokenizer the file's metadata describes (byte-level BPE only).
pub fn tokenizer_from_gguf(g: &Gguf) -> Result<tokenizers::Tokenizer> {
    let model = g.meta_str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        let what = match model {
            "llama" => " (SentencePiece)",
            "t5" => " (Unigram)",
            "bert" => " (WordPiece)",
            "rwkv" => " (RWKV)",
            "gemma4" => " (Gemma 4 SentencePiece)",
            _ => "",
        };
        return Err(g_err(
            g,
            format!("tokenizer.ggml.model `{model}`{what} is not supported: only `gpt2` (byte-level BPE) is"),
        ));
    }
    let pre = match g.meta("tokenizer.ggml.pre") {
        Some(_) => g.meta_str("tokenizer.ggml.pre")?,
        None => "default",
    };
    let split = split_regex(pre).map_err(|d| g_err(g, d))?;
    let tokens = g.meta_str_array("tokenizer.ggml.tokens")?;
    let types = match g.meta("tokenizer.ggml.token_type") {
        Some(_) => g.meta_i32_array("tokenizer.ggml.token_type")?,
        None => Vec::new(),
    };
    if !types.is_empty() && types.len() != tokens.len() {
        return Err(g_err(
            g,
            format!(
                "metadata key `tokenizer.ggml.token_type` has {} entries for {} tokens",
                types.len(),
                tokens.len()
            ),
        ));
    }
    let merges_raw = match g.meta("tokenizer.ggml.merges") {
        Some(_) => g.meta_str_array("tokenizer.ggml.merges")?,
        None => {
            return Err(g_err(
                g,
                "metadata key `tokenizer.ggml.merges` is missing (a gpt2 tokenizer needs its merges)",
            ))
        }
    };

    let alphabet = byte_alphabet();
    let in_alphabet = |t: &str| t.chars().all(|c| alphabet.contains(&c));
    let respell = |t: &str| -> String {
        if in_alphabet(t) {
            t.to_string()
        } else {
            t.bytes().map(|b| alphabet[b as usize]).collect()
        }
    };
    // A later token with the same spelling wins, as in a Python dict built in order.
    let vocab: tokenizers::models::bpe::Vocab =
        tokens.iter().enumerate().map(|(i, t)| (respell(t), i as u32)).collect();
    let mut merges = Vec::with_capacity(merges_raw.len());
    for (i, m) in merges_raw.iter().enumerate() {
        let mut parts = m.split(' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), None) => merges.push((a.to_string(), b.to_string())),
            _ => {
                return Err(g_err(
                    g,
                    format!(
                    "metadata key `tokenizer.ggml.merges`: entry {i} {m:?} is not two tokens separated by one space"
                ),
                ))
            }
        }
    }
    let has = |t: &str| vocab.contains_key(t);
    let bpe = tokenizers::models::bpe::BPE::builder()
        .vocab_and_merges(vocab.clone(), merges)
        .continuing_subword_prefix(String::new())
        .end_of_word_suffix(String::new())
        .build()
        .map_err(|e| g_err(g, format!("tokenizer.ggml.tokens/merges do not make a BPE model: {e}")))?;

    let mut tk = tokenizers::Tokenizer::new(bpe);
    let pre_tok: PreTokenizerWrapper = match split {
        None => ByteLevel::new(false, true, true).into(),
        Some(re) => {
            let s = Split::new(SplitPattern::Regex(re), SplitDelimiterBehavior::Isolated, false)
                .map_err(|e| g_err(g, format!("split regex for pre `{pre}`: {e}")))?;
            Sequence::new(vec![s.into(), ByteLevel::new(false, true, false).into()]).into()
        }
    };
    tk.with_pre_tokenizer(Some(pre_tok));
    tk.with_decoder(Some(ByteLevel::default()));

    let special = |t: &str| AddedToken::from(t.to_string(), true).normalized(false);
    let mut specials: Vec<AddedToken> = Vec::new();
    let mut user: Vec<AddedToken> = Vec::new();
    for (t, &ty) in tokens.iter().zip(&types) {
        if ty == CONTROL && in_alphabet(t) {
            specials.push(special(t));
        } else if ty == USER_DEFINED && has(t) {
            user.push(AddedToken::from(t.to_string(), false).normalized(false));
        }
    }
    let mut named: Vec<&str> = Vec::new();
    if has("<|endoftext|>") {
        named.push("<|endoftext|>");
    }
    for key in ["bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"] {
        if let Some(t) = id_token(g, &tokens, &format!("tokenizer.ggml.{key}"))? {
            named.push(t);
        }
    }
    for t in named {
        if !specials.iter().any(|s| s.content == t) {
            specials.push(special(t));
        }
    }
    tk.add_special_tokens(&specials);
    tk.add_tokens(&user);
    Ok(tk)
}

/// The token string of the id under `key` (e.g. `tokenizer.ggml.eos_token_id`), if the key is set.
pub fn token_of(g: &Gguf, key: &str) -> Result<Option<String>> {
    let tokens = g.meta_str_array("tokenizer.ggml.tokens")?;
    Ok(id_token(g, &tokens, key)?.map(String::from))
}
