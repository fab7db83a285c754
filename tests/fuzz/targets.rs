//! One test per loader: the seeds it starts from and what one execution does with an input.
//! Errors are the expected outcome of most inputs; only a panic, a runaway allocation or a slow
//! execution fails (harness.rs).
use crate::common::gguf_writer::{tiny_bpe_tokenizer, W};
use crate::harness::fuzz;
use std::path::{Path, PathBuf};
use wgllm::backend::cpu::CpuBackend;
use wgllm::engine::sampler::{Sampler, Sampling};
use wgllm::engine::{Engine, ModelBytes};
use wgllm::model::chat_template::{ChatMessage, ChatOptions, ChatTemplate};
use wgllm::model::config::Config;
use wgllm::model::gguf::{Gguf, Value};
use wgllm::model::gguf_config::config_from_gguf;
use wgllm::model::safetensors::SafeTensors;
use wgllm::model::tokenizer::Tokenizer;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(root().join(rel)).unwrap_or_else(|e| panic!("seed {rel}: {e}"))
}

const GOLDEN_MODELS: [&str; 3] = ["qwen3-tiny", "llama-tiny", "qwen3_5-tiny"];

fn golden_file(model: &str, file: &str) -> Vec<u8> {
    read(&format!("goldens/{model}/model/{file}"))
}

/// A GGUF with a tiny byte-level BPE tokenizer and a chat template (tests/gguf_smollm2.rs's), BOS
/// added to prompts.
fn tokenizer_gguf() -> Vec<u8> {
    let mut w = tiny_bpe_tokenizer("qwen2");
    w.kv("tokenizer.ggml.bos_token_id", Value::U32(5));
    w.kv("tokenizer.ggml.add_bos_token", Value::Bool(true));
    w.bytes()
}

/// What a loaded tokenizer is asked: encode, decode, the chat template.
fn exercise(t: &Tokenizer) {
    if let Ok(ids) = t.encode_prompt("hi hello 日本 <|end|>\n\t") {
        let _ = t.decode(&ids);
    }
    let _ = t.decode(&[0, 1, 2, 3, u32::MAX]);
    let _ = t.apply_chat("hi");
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        ChatMessage::new("system", "Be brief."),
        ChatMessage::new("user", "hi"),
        ChatMessage::new("assistant", "hello"),
        ChatMessage::new("user", "and?"),
    ]
}

#[test]
fn gguf_reader() {
    let seeds = vec![
        W::valid().bytes(),
        tokenizer_gguf(),
        read("tests/fixtures/llama-tiny-q8_0.gguf"),
    ];
    fuzz("gguf", seeds, |b| {
        match Gguf::from_bytes(Path::new("fuzz.gguf"), b.to_vec()) {
            Ok(g) => {
                let _ = config_from_gguf(&g);
                for t in &g.tensors {
                    let _ = g.get(&t.name);
                }
                true
            }
            Err(_) => false,
        }
    });
}

#[test]
fn gguf_tokenizer() {
    fuzz("gguf_tokenizer", vec![tokenizer_gguf()], |b| {
        let Ok(g) = Gguf::from_bytes(Path::new("fuzz.gguf"), b.to_vec()) else {
            return false;
        };
        match Tokenizer::from_gguf(&g) {
            Ok(t) => {
                exercise(&t);
                true
            }
            Err(_) => false,
        }
    });
}

#[test]
fn safetensors_reader() {
    let seeds = GOLDEN_MODELS
        .iter()
        .map(|m| golden_file(m, "model.safetensors"))
        .collect();
    fuzz("safetensors", seeds, |b| {
        match SafeTensors::from_bytes(Path::new("fuzz.safetensors"), b.to_vec()) {
            Ok(st) => {
                for name in st.tensors.keys() {
                    let _ = st.get(name);
                }
                true
            }
            Err(_) => false,
        }
    });
}

#[test]
fn safetensors_index() {
    let seeds = vec![
        br#"{"metadata":{"total_size":1},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}"#.to_vec(),
        br#"{"weight_map":{"model.embed_tokens.weight":"sub/model.safetensors"}}"#.to_vec(),
    ];
    fuzz("safetensors_index", seeds, |b| {
        SafeTensors::shard_names(Path::new("model.safetensors.index.json"), b).is_ok()
    });
}

#[test]
fn config_json() {
    let seeds = GOLDEN_MODELS.iter().map(|m| golden_file(m, "config.json")).collect();
    fuzz("config", seeds, |b| {
        Config::parse_bytes(b, Path::new("config.json")).is_ok()
    });
}

#[test]
fn tokenizer_json() {
    let cfg = golden_file("qwen3-tiny", "tokenizer_config.json");
    let seeds = vec![
        golden_file("qwen3-tiny", "tokenizer.json"),
        read("tests/fixtures/smollm2_tokenizer.json"),
    ];
    fuzz("tokenizer_json", seeds, |b| {
        match Tokenizer::from_bytes("tokenizer.json", b, Some(("tokenizer_config.json".into(), &cfg))) {
            Ok(t) => {
                exercise(&t);
                true
            }
            Err(_) => false,
        }
    });
}

#[test]
fn tokenizer_config_json() {
    let json = golden_file("qwen3-tiny", "tokenizer.json");
    let seeds = GOLDEN_MODELS
        .iter()
        .map(|m| golden_file(m, "tokenizer_config.json"))
        .collect();
    fuzz("tokenizer_config", seeds, |b| {
        match Tokenizer::from_bytes("tokenizer.json", &json, Some(("tokenizer_config.json".into(), b))) {
            Ok(t) => {
                exercise(&t);
                true
            }
            Err(_) => false,
        }
    });
}

#[test]
fn chat_template() {
    let dir = root().join("tests/fixtures/chat_templates");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    names.sort();
    let seeds = names.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let msgs = conversation();
    let opts = ChatOptions {
        add_generation_prompt: true,
        tools: Some(r#"[{"type":"function","function":{"name":"f","parameters":{}}}]"#.into()),
        ..ChatOptions::default()
    };
    fuzz("chat_template", seeds, |b| {
        let Ok(src) = std::str::from_utf8(b) else {
            return false;
        };
        match ChatTemplate::new("fuzz.jinja", src) {
            Ok(t) => t
                .with_clock(0)
                .with_token("bos_token", Some("<s>"))
                .with_token("eos_token", Some("</s>"))
                .render(&msgs, &opts)
                .is_ok(),
            Err(_) => false,
        }
    });
}

/// A loaded model answers one greedy step (the forward runs over whatever the file held).
fn step(mut e: Engine) {
    let _ = e.generate(
        &[0, 1],
        1,
        &mut Sampler::new(Sampling::default()),
        None,
        false,
        &mut |_| true,
    );
}

#[test]
fn model_gguf_on_cpu() {
    fuzz(
        "model_gguf",
        vec![read("tests/fixtures/llama-tiny-q8_0.gguf")],
        |b| match Engine::load_gguf_bytes(
            Path::new("fuzz.gguf"),
            b.to_vec(),
            Box::new(CpuBackend::new()),
            8,
            &mut |_, _| {},
        ) {
            Ok(e) => {
                step(e);
                true
            }
            Err(_) => false,
        },
    );
}

/// The input: a u32 length, that many bytes of config.json, then model.safetensors (so the
/// mutator reaches both); tokenizer files as the golden's.
#[test]
fn model_safetensors_on_cpu() {
    let seeds = GOLDEN_MODELS
        .iter()
        .map(|m| {
            let c = golden_file(m, "config.json");
            let mut v = (c.len() as u32).to_le_bytes().to_vec();
            v.extend_from_slice(&c);
            v.extend_from_slice(&golden_file(m, "model.safetensors"));
            v
        })
        .collect();
    let tok = golden_file("qwen3-tiny", "tokenizer.json");
    let tok_cfg = golden_file("qwen3-tiny", "tokenizer_config.json");
    fuzz("model_safetensors", seeds, |b| {
        let n = b
            .get(..4)
            .map_or(0, |h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize);
        let (config, weights) = b
            .get(4..)
            .unwrap_or_default()
            .split_at(n.min(b.len().saturating_sub(4)));
        let files = ModelBytes {
            config,
            safetensors: weights.to_vec(),
            tokenizer: Some(&tok),
            tokenizer_config: Some(&tok_cfg),
            generation_config: None,
        };
        match Engine::load_bytes(
            Path::new("fuzz-model"),
            files,
            Box::new(CpuBackend::new()),
            8,
            &mut |_, _| {},
        ) {
            Ok(e) => {
                step(e);
                true
            }
            Err(_) => false,
        }
    });
}
