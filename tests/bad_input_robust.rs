//! Issue 21's findings, one regression case each: files that used to panic inside a dependency,
//! allocate from an unchecked count, wrap a size, run a feature the engine lacks, or reach outside
//! the model directory. Each error must name the file and the field (tests/bad_input.rs and
//! tests/bad_config.rs hold the older cases; this file keeps that one under ~600 lines).
mod common;

use common::gguf_writer::{refused, W};
use common::model_copy::*;
use serde_json::{json, Value};
use wgllm::engine::chat::Conversation;
use wgllm::model::chat_template::{ChatMessage, ChatOptions, ChatTemplate};
use wgllm::model::config::Config;
use wgllm::model::gguf::{Value as G, MAX_META_ENTRIES};
use wgllm::model::tokenizer::Tokenizer;

// ---------------------------------------------------------------------------------------------
// tokenizer.json: the tokenizers crate panics on these; we must answer with the file's name
// ---------------------------------------------------------------------------------------------

fn tokenizer_err(m: &Model, bytes: &[u8]) -> String {
    std::fs::write(m.path("tokenizer.json"), bytes).unwrap();
    m.load_err()
}

#[test]
fn tokenizer_json_cut_inside_the_decoder_is_named() {
    let m = Model::new("tok-decoder");
    let err = tokenizer_err(&m, br#"{"decoder":{"#);
    assert_names(&err, &["tokenizer.json", "not valid JSON"]);
    // a download cut inside the decoder value (the golden file's "decoder" starts before byte 973)
    let full = std::fs::read(golden().join("tokenizer.json")).unwrap();
    let at = String::from_utf8_lossy(&full).find("\"decoder\"").unwrap() + 15;
    let err = tokenizer_err(&m, &full[..at]);
    assert_names(&err, &["tokenizer.json", "not valid JSON"]);
}

#[test]
fn precompiled_normalizer_without_a_usable_charsmap_is_named() {
    let full = std::fs::read(golden().join("tokenizer.json")).unwrap();
    for charsmap in [None, Some(json!("not base64 !!")), Some(json!(7))] {
        let m = Model::new("tok-precompiled");
        let mut v: Value = serde_json::from_slice(&full).unwrap();
        let mut n = json!({"type": "Precompiled"});
        if let Some(c) = &charsmap {
            n["precompiled_charsmap"] = c.clone();
        }
        // nested in a Sequence, where the crate reaches it through the same panic
        v["normalizer"] = json!({"type": "Sequence", "normalizers": [{"type": "NFC"}, n]});
        let err = tokenizer_err(&m, &serde_json::to_vec(&v).unwrap());
        assert_names(&err, &["tokenizer.json", "normalizer.normalizers[1]", "Precompiled"]);
    }
}

#[test]
fn tokenizer_config_fields_of_the_wrong_type_are_named() {
    let m = Model::new("tok-config");
    std::fs::write(m.path("tokenizer_config.json"), br#"{"add_bos_token": "yes"}"#).unwrap();
    assert_names(&m.load_err(), &["tokenizer_config.json", "add_bos_token"]);
}

// ---------------------------------------------------------------------------------------------
// counts and sizes from files, checked before anything is sized from them
// ---------------------------------------------------------------------------------------------

const Q35: &str = r#"{"model_type":"qwen3_5_text","hidden_size":128,"intermediate_size":256,"num_hidden_layers":4,
    "num_attention_heads":4,"num_key_value_heads":2,"head_dim":64,"rms_norm_eps":1e-6,"vocab_size":512,
    "linear_num_key_heads":2,"linear_num_value_heads":4,"linear_key_head_dim":32,"linear_value_head_dim":32,
    "linear_conv_kernel_dim":4,"tie_word_embeddings":true,"eos_token_id":511,
    "rope_parameters":{"rope_theta":1e7,"partial_rotary_factor":0.25}}"#;

fn config_err(text: &str) -> String {
    match Config::parse(text, "m/config.json") {
        Ok(_) => panic!("config loaded:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_huge_layer_count_without_layer_types_is_refused_before_the_lists() {
    assert!(Config::parse(Q35, "m/config.json").is_ok());
    for n in ["10000000", "1000000000000"] {
        let t = std::time::Instant::now();
        let err = config_err(&Q35.replace("\"num_hidden_layers\":4", &format!("\"num_hidden_layers\":{n}")));
        assert_names(&err, &["m/config.json", "num_hidden_layers", n]);
        assert!(t.elapsed().as_secs_f64() < 1.0, "took {:?}", t.elapsed());
    }
}

#[test]
fn sizes_that_wrap_are_refused_by_field() {
    let m = Model::new("head-dim-wrap");
    // 2^63 + 32: num_heads * head_dim wraps to a small number in release builds
    m.edit_config(|c| {
        c.insert("head_dim".into(), json!(9223372036854775840u64));
    });
    assert_names(&m.load_err(), &["config.json", "num_attention_heads", "overflow"]);
    let err = config_err(&Q35.replace(
        "\"linear_key_head_dim\":32",
        "\"linear_key_head_dim\":4611686018427387904",
    ));
    assert_names(&err, &["m/config.json", "linear_num_key_heads", "overflow"]);
}

#[test]
fn gguf_metadata_arrays_past_the_entry_budget_are_refused() {
    let mut w = W::valid();
    // legal on its own (every entry backed by a byte), but 32 bytes a value once decoded
    w.kv("big", G::Array(vec![G::U8(1); MAX_META_ENTRIES + 1]));
    refused(
        "meta-budget",
        &w.bytes(),
        &["metadata key `big`", "array entries in all"],
    );
    // the budget is over the whole file, not one array
    let mut w = W::valid();
    w.kv("half1", G::Array(vec![G::U8(1); MAX_META_ENTRIES / 2 + 1]));
    w.kv("half2", G::Array(vec![G::U8(1); MAX_META_ENTRIES / 2 + 1]));
    refused(
        "meta-budget2",
        &w.bytes(),
        &["metadata key `half2`", "array entries in all"],
    );
}

// ---------------------------------------------------------------------------------------------
// chat templates: a budget on rendering; the context checked before tokenizing
// ---------------------------------------------------------------------------------------------

fn render_err(src: &str) -> String {
    let t = ChatTemplate::new("m/tokenizer_config.json", src).unwrap();
    match t.render(&[ChatMessage::new("user", "hi")], &ChatOptions::default()) {
        Ok(s) => panic!("rendered {} bytes", s.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn runaway_templates_stop_with_the_template_named() {
    let t = std::time::Instant::now();
    let err = render_err("{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}");
    assert_names(&err, &["m/tokenizer_config.json", "steps"]);
    // few steps, much output: each step prints 1 MB
    let err = render_err("{% for i in range(1000) %}{{ 'x' * 1000000 }}{% endfor %}");
    assert_names(&err, &["m/tokenizer_config.json", "bytes"]);
    assert!(t.elapsed().as_secs_f64() < 30.0, "took {:?}", t.elapsed());
}

#[test]
fn a_tag_whose_close_overlaps_its_open_is_an_error_not_a_panic() {
    // found by the chat_template fuzz target (tests/fuzz): `{%}` sliced the tag backwards
    for src in ["{%}", "a{%}b", "{%-}", "{% generation %}{%}"] {
        assert!(
            ChatTemplate::new("m/tokenizer_config.json", src).is_err(),
            "{src:?} parsed"
        );
    }
}

#[test]
fn a_prompt_far_past_the_context_is_refused_before_tokenizing() {
    let dir = golden();
    let tok = Tokenizer::from_dir(&dir).unwrap().unwrap();
    let huge = "hello ".repeat(4 << 20); // 24 MiB
    assert!(tok.surely_longer_than(&huge, 512));
    assert!(!tok.surely_longer_than("hello", 512));
    let err = tok.encode_prompt_max(&huge, 512).unwrap_err().to_string();
    assert_names(&err, &["prompt too long", "before tokenizing", "512"]);
    let mut conv = Conversation::new(None);
    conv.push("user", &huge);
    let err = conv.prompt_ids(&tok, 512).unwrap_err().to_string();
    assert_names(&err, &["bytes", "512"]);
    // a prompt that fits is tokenized as before
    assert_eq!(
        tok.encode_prompt_max("hello", 512).unwrap(),
        tok.encode_prompt("hello").unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// lenient files: shard paths, duplicate keys, control characters
// ---------------------------------------------------------------------------------------------

#[test]
fn shard_names_outside_the_model_directory_are_refused() {
    for shard in ["../model.safetensors", "/dev/zero", "a/../../x.safetensors", ""] {
        let m = Model::new("shard-escape");
        let index = json!({"weight_map": {"model.embed_tokens.weight": shard}});
        std::fs::write(m.path("model.safetensors.index.json"), index.to_string()).unwrap();
        let err = m.load_err();
        assert_names(
            &err,
            &["model.safetensors.index.json", "weight_map", "not a file name inside"],
        );
    }
}

#[test]
fn duplicate_tensor_keys_are_refused() {
    let m = Model::new("dup-key");
    let st = m.st();
    let mut h = serde_json::to_string(&Value::Object(st.header.clone())).unwrap();
    let (name, entry) = st.header.iter().find(|(k, _)| *k != "__metadata__").unwrap();
    h.insert_str(1, &format!("{}:{},", json!(name), entry));
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(&st.data);
    std::fs::write(m.path(ST), out).unwrap();
    assert_names(&m.load_err(), &[ST, &format!("tensor `{name}` appears twice")]);
}

#[test]
fn control_characters_from_files_are_escaped_when_printed() {
    let m = Model::new("ctl-name");
    let mut st = m.st();
    let (name, entry) = st.header.iter().find(|(k, _)| *k != "__metadata__").unwrap();
    let (name, mut entry) = (name.clone(), entry.clone());
    entry["dtype"] = json!("F8\u{1b}[2J");
    st.header.remove(&name);
    st.header.insert(format!("evil\u{1b}[31m\r\n{name}"), entry);
    st.write(&m.path(ST));
    let err = m.load_err();
    assert!(!err.chars().any(char::is_control), "raw control characters in: {err:?}");
    assert_names(&err, &[ST, "evil\\u{1b}[31m\\r\\n", "F8\\u{1b}[2J"]);
}

// ---------------------------------------------------------------------------------------------
// config fields the engine does not implement, refused by name; numbers checked in their dtype
// ---------------------------------------------------------------------------------------------

fn edited_err(f: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
    let m = Model::new("unimplemented");
    m.edit_config(f);
    m.load_err()
}

#[test]
fn unimplemented_fields_are_refused_by_name() {
    let cases: Vec<(&str, Value)> = vec![
        ("attention_bias", json!(true)),
        ("mlp_bias", json!(true)),
        ("hidden_act", json!("gelu")),
        ("use_sliding_window", json!(true)),
        (
            "layer_types",
            json!(["sliding_attention", "full_attention", "full_attention"]),
        ),
        ("rope_scaling", json!({"rope_type": "yarn", "factor": 4.0})),
    ];
    for (field, v) in cases {
        let err = edited_err(|c| {
            c.insert(field.into(), v.clone());
        });
        assert_names(&err, &["config.json", &format!("`{field}`")]);
    }
    // Qwen3.5 too (the bias finding was on Qwen3 and Qwen3.5)
    let err = config_err(&Q35.replace("\"vocab_size\"", "\"attention_bias\":true,\"vocab_size\""));
    assert_names(&err, &["m/config.json", "attention_bias"]);
}

#[test]
fn what_real_configs_carry_still_loads() {
    let m = Model::new("real-fields");
    m.edit_config(|c| {
        c.insert("sliding_window".into(), json!(4096));
        c.insert("use_sliding_window".into(), json!(false));
        c.insert("rope_scaling".into(), Value::Null);
        c.insert("attention_bias".into(), json!(false));
        c.insert("hidden_act".into(), json!("silu"));
    });
    m.load(64).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn numbers_are_checked_in_the_dtype_they_are_used_in() {
    let cases: Vec<(&str, Value, &str)> = vec![
        ("rms_norm_eps", json!(1e300), "rms_norm_eps"), // inf in f32
        ("rms_norm_eps", json!(1e-50), "rms_norm_eps"), // 0 in f32
        ("eos_token_id", json!(512), "eos_token_id"),   // vocab_size is 512
        ("bos_token_id", json!(100000), "bos_token_id"),
        ("head_dim", json!(33), "head_dim"), // RoPE rotates pairs
    ];
    for (field, v, named) in cases {
        let err = edited_err(|c| {
            c.insert(field.into(), v.clone());
        });
        assert_names(&err, &["config.json", &format!("`{named}`")]);
    }
    let err = edited_err(|c| {
        c.insert("rope_parameters".into(), json!({"rope_theta": -1.0}));
    });
    assert_names(&err, &["config.json", "rope_theta"]);
}

// ---------------------------------------------------------------------------------------------
// device faults: an allocation past what the adapter allows is an error saying what to try
// ---------------------------------------------------------------------------------------------

#[test]
fn an_allocation_past_the_adapter_is_an_error_with_advice() {
    use wgllm::backend::wgpu::WgpuBackend;
    use wgllm::backend::Backend;
    use wgllm::dtype::DType;
    let devs = WgpuBackend::all();
    if devs.is_empty() {
        assert!(
            std::env::var("WGLLM_REQUIRE_GPU").map_or(true, |v| v != "1"),
            "WGLLM_REQUIRE_GPU=1 but no wgpu adapter"
        );
        eprintln!("SKIP: no wgpu adapter");
        return;
    }
    for dev in devs {
        // 2^40 f32: past max_buffer_size on every adapter (lavapipe: 2^31 or so)
        let err = dev.alloc(DType::F32, &[1 << 20, 1 << 20]).unwrap_err().to_string();
        assert_names(
            &err,
            &[
                &dev.name(),
                "create_buffer",
                "[1048576x1048576]",
                "max_buffer_size",
                "--ctx",
            ],
        );
        // a shape whose element count wraps in usize (a corrupt file's dims)
        let err = dev.alloc(DType::F32, &[1 << 40, 1 << 40]).unwrap_err().to_string();
        assert_names(&err, &[&dev.name(), "create_buffer", "overflows", "--ctx"]);
        // the device still works afterwards
        let t = dev.alloc(DType::F32, &[4]).unwrap();
        dev.upload(&t, &[0u8; 16]).unwrap();
    }
}
