//! Streaming detokenization (`StreamDecoder`): CJK, emoji and combining characters streamed token
//! by token through the real SmolLM2 GGUF tokenizer (byte-level BPE; skipped with the reason when
//! the file is absent unless `WGLLM_REQUIRE_MODELS=1`), the tiny golden models' tokenizers and a
//! byte-fallback (SentencePiece-style) tokenizer; the concatenated stream equals the one-shot
//! decode exactly, and each step has handed out everything up to the last complete character.
mod common;
use std::path::Path;
use wgllm::model::gguf::Gguf;
use wgllm::model::gguf_tokenizer::byte_alphabet;
use wgllm::model::stream::{is_byte_token, StreamDecoder};
use wgllm::model::tokenizer::Tokenizer;

const TEXTS: &[&str] = &[
    "今天天气很好，我们去公园散步吧。",
    "日本語のテキスト、한국어 텍스트",
    "Emoji: 👍🏽 👨‍👩‍👧‍👦 🇫🇷 😀!",
    "Combining: e\u{301}te\u{301}, n\u{303}, a\u{30A}, Z\u{351}\u{34B}\u{34C}",
    "mixed ASCII 中文 and 🦀 Rust\nnew line ünïcödé",
];

/// Streams `ids` one by one; checks that after each step the text handed out is the one-shot
/// decode of the ids so far less a trailing U+FFFD run (and, while the last ids are
/// byte-fallback tokens, a prefix of it), and returns the whole stream.
fn stream(tok: &Tokenizer, ids: &[u32], stops: &[String]) -> (String, StreamDecoder) {
    let mut d = StreamDecoder::new(stops);
    let mut out = String::new();
    for (k, &id) in ids.iter().enumerate() {
        out += &d.push(tok, id).unwrap();
        if stops.is_empty() {
            let prefix = tok.decode(&ids[..=k]).unwrap();
            let prefix = prefix.trim_end_matches('\u{FFFD}');
            if is_byte_token(&tok.id_to_token(id).unwrap()) {
                assert!(
                    prefix.starts_with(&out),
                    "after {} of {ids:?}: {out:?} vs {prefix:?}",
                    k + 1
                );
            } else {
                assert_eq!(out, prefix, "after {} of {ids:?}", k + 1);
            }
        }
    }
    out += &d.finish();
    (out, d)
}

fn check_texts(name: &str, tok: &Tokenizer, round_trips: bool) {
    for text in TEXTS {
        let ids = tok.encode(text).unwrap();
        let one_shot = tok.decode(&ids).unwrap();
        let (streamed, d) = stream(tok, &ids, &[]);
        assert_eq!(streamed, one_shot, "{name}: {text:?}");
        assert_eq!(d.text(), one_shot, "{name}: {text:?}");
        if round_trips {
            assert_eq!(one_shot, *text, "{name}: the tokenizer round-trips this text");
        }
    }
}

fn smollm2() -> Option<Tokenizer> {
    let p = common::smollm2_path()?;
    Some(Tokenizer::from_gguf(&Gguf::open(&p).unwrap()).unwrap())
}

fn golden(name: &str) -> Tokenizer {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("goldens")
        .join(name)
        .join("model");
    Tokenizer::from_dir(&dir).unwrap().unwrap()
}

/// Byte-level ids for raw bytes (the byte alphabet's one-character tokens).
fn byte_ids(tok: &Tokenizer, bytes: &[u8]) -> Vec<u32> {
    let alpha = byte_alphabet();
    bytes
        .iter()
        .map(|&b| tok.token_id(&alpha[b as usize].to_string()).unwrap())
        .collect()
}

/// Invalid and unfinished UTF-8: a lone lead byte before ASCII, a stray continuation byte, and a
/// sequence the stream ends in the middle of; the stream still equals the one-shot decode.
fn check_broken_bytes(name: &str, tok: &Tokenizer, ids_of: impl Fn(&[u8]) -> Vec<u32>) {
    for bytes in [
        &b"ab\xE4cd"[..],
        b"\x80x",
        b"ok \xE4\xBB",
        b"\xF0\x9F\x98",
        b"\xE4\xBB\xE4\xBB\x8A",
        "气".as_bytes(),
        b"\xE6\xB0\x94\xE5",
        b"\xE6\xB0\x94\x80ab",
    ] {
        let ids = ids_of(bytes);
        let one_shot = tok.decode(&ids).unwrap();
        let (streamed, _) = stream(tok, &ids, &[]);
        assert_eq!(streamed, one_shot, "{name}: bytes {bytes:?}");
    }
}

#[test]
fn smollm2_gguf_streams_cjk_emoji_combining() {
    let Some(tok) = smollm2() else { return };
    check_texts("smollm2", &tok, true);
    // a CJK character the vocabulary splits over several tokens is held back until complete
    let ids = tok.encode("散步").unwrap();
    assert!(ids.len() > 2, "expected byte tokens for 散步, got {ids:?}");
    check_broken_bytes("smollm2", &tok, |b| byte_ids(&tok, b));
}

#[test]
fn tiny_golden_tokenizers_stream_cjk_emoji_combining() {
    for name in ["qwen3-tiny", "llama-tiny", "qwen3_5-tiny"] {
        let tok = golden(name);
        check_texts(name, &tok, true);
        check_broken_bytes(name, &tok, |b| byte_ids(&tok, b));
    }
}

/// A SentencePiece-style tokenizer with byte fallback (`<0xE4>` tokens), Metaspace spaces and the
/// Llama-2 decoder chain (Replace, ByteFallback, Fuse, Strip).
fn byte_fallback() -> (Tokenizer, tempdir::Dir) {
    let mut vocab = serde_json::Map::new();
    vocab.insert("<unk>".into(), 0.into());
    for b in 0..=255u32 {
        vocab.insert(format!("<0x{b:02X}>"), (b + 1).into());
    }
    for (i, t) in ["▁", "a", "b", "c", "e", "t", "n", "今", "天", "▁a"].iter().enumerate() {
        vocab.insert(t.to_string(), (257 + i as u32).into());
    }
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": null, "post_processor": null,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
            "vocab": vocab, "merges": [["▁", "a"]]}
    });
    let dir = tempdir::Dir::new("byte-fallback");
    std::fs::write(dir.0.join("tokenizer.json"), serde_json::to_string(&json).unwrap()).unwrap();
    (Tokenizer::from_dir(&dir.0).unwrap().unwrap(), dir)
}

#[test]
fn byte_fallback_tokenizer_streams_cjk_emoji_combining() {
    let (tok, _dir) = byte_fallback();
    let ids = tok.encode("今天 散步 👍🏽").unwrap();
    assert!(ids.contains(&(0xE6 + 1)), "散 goes through byte tokens: {ids:?}");
    check_texts("byte-fallback", &tok, false);
    check_broken_bytes("byte-fallback", &tok, |b| b.iter().map(|&x| x as u32 + 1).collect());
    // a run with a bad byte decodes to U+FFFD throughout, so a run is held back until it ends
    let a = tok.token_id("a").unwrap();
    for bytes in [&b"\xE6\xB0\x94\xE5"[..], b"\xE6\xB0\x94\x80", b"\xE6\xB0\x94"] {
        let mut ids: Vec<u32> = bytes.iter().map(|&x| x as u32 + 1).collect();
        ids.extend([a, 0xE6 + 1, a]);
        let (streamed, _) = stream(&tok, &ids, &[]);
        assert_eq!(streamed, tok.decode(&ids).unwrap(), "bytes {bytes:?}");
    }
}

#[test]
fn stop_strings_cut_the_stream_where_the_one_shot_text_is_cut() {
    let tok = golden("qwen3-tiny");
    let text = "Hello 世界, wonderful 🌍 world";
    let ids = tok.encode(text).unwrap();
    for (stop, want) in [
        ("界,", "Hello 世"),
        ("🌍", "Hello 世界, wonderful "),
        ("world", "Hello 世界, wonderful 🌍 "),
        ("wonderful 🌍 world!", text),
        ("Hello", ""),
    ] {
        let stops = vec!["never there".to_string(), stop.to_string()];
        let (streamed, d) = stream(&tok, &ids, &stops);
        assert_eq!(streamed, want, "stop {stop:?}");
        assert_eq!(d.text(), want, "stop {stop:?}");
        assert_eq!(d.stopped(), want != text, "stop {stop:?}");
    }
}

mod tempdir {
    pub struct Dir(pub std::path::PathBuf);
    impl Dir {
        pub fn new(tag: &str) -> Dir {
            let p = std::env::temp_dir().join(format!("wgllm-stream-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
