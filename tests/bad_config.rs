//! Bad input gets a clear error naming the file and the field: never a panic, never a silent
//! success (as tests/bad_input.rs, which corrupts the safetensors files). Here: config.json,
//! prompts and token ids, tokenizer files, sharded checkpoints.
mod common;

use common::model_copy::*;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// 9-10: config.json itself
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_model_type() {
    let m = Model::new("mtype");
    m.edit_config(|c| {
        c.insert("model_type".into(), "mamba9".into());
    });
    assert_names(&m.load_err(), &["config.json", "model_type", "mamba9", "qwen3"]);

    for bad in [None, Some(Value::from(3)), Some(Value::Null)] {
        let m = Model::new("mtype-missing");
        m.edit_config(|c| {
            match bad {
                None => c.remove("model_type"),
                Some(v) => c.insert("model_type".into(), v),
            };
        });
        assert_names(&m.load_err(), &["config.json", "model_type"]);
    }
}

#[test]
fn malformed_config_json() {
    for text in [
        "{\"model_type\": \"qwen3\", \"hidden_size\": 12",
        "not json at all",
        "",
        "[1, 2, 3]",
        "\u{feff}\u{0}",
    ] {
        let m = Model::new("cfg-text");
        std::fs::write(m.path("config.json"), text).unwrap();
        assert_names(&m.load_err(), &["config.json"]);
    }
    let m = Model::new("cfg-text");
    std::fs::write(m.path("config.json"), "not json").unwrap();
    assert_names(&m.load_err(), &["config.json", "JSON"]);

    let m = Model::new("cfg-none");
    std::fs::remove_file(m.path("config.json")).unwrap();
    assert_names(&m.load_err(), &["config.json"]);
}

#[test]
fn config_field_of_the_wrong_type() {
    let cases: Vec<(&str, Value)> = vec![
        ("hidden_size", "128".into()),
        ("num_hidden_layers", 3.5.into()),
        ("num_attention_heads", (-4).into()),
        ("num_attention_heads", 0.into()),
        ("num_key_value_heads", 0.into()),
        ("num_key_value_heads", 3.into()),
        ("head_dim", Value::Bool(true)),
        ("intermediate_size", Value::Array(vec![])),
        ("vocab_size", Value::Null),
        ("rms_norm_eps", "1e-6".into()),
        ("rms_norm_eps", (-1.0).into()),
        ("tie_word_embeddings", "yes".into()),
        ("eos_token_id", "<|im_end|>".into()),
        ("eos_token_id", serde_json::json!([1, "x"])),
        // 2^32 + 511 used to wrap silently onto token 511
        ("eos_token_id", serde_json::json!(4294967807u64)),
        ("eos_token_id", serde_json::json!([511, 4294967807u64])),
        ("bos_token_id", serde_json::json!(-1)),
        ("max_position_embeddings", "512".into()),
    ];
    for (field, v) in cases {
        let m = Model::new("cfg-field");
        m.edit_config(|c| {
            c.insert(field.into(), v.clone());
        });
        let err = m.load_err();
        assert_names(&err, &["config.json", &format!("`{field}`")]);
    }
    // a missing required field
    let m = Model::new("cfg-field-missing");
    m.edit_config(|c| {
        c.remove("intermediate_size");
    });
    assert_names(&m.load_err(), &["config.json", "`intermediate_size`", "missing"]);
    // rope_theta: wrong type inside rope_parameters, or nowhere at all
    let m = Model::new("cfg-rope");
    m.edit_config(|c| {
        c["rope_parameters"]["rope_theta"] = "1e6".into();
    });
    assert_names(&m.load_err(), &["config.json", "rope_parameters", "`rope_theta`"]);
    let m = Model::new("cfg-rope-missing");
    m.edit_config(|c| {
        c.remove("rope_parameters");
    });
    assert_names(&m.load_err(), &["config.json", "`rope_theta`"]);
}

// ---------------------------------------------------------------------------------------------
// 11: the prompt against the context and the vocabulary
// ---------------------------------------------------------------------------------------------

#[test]
fn prompt_longer_than_the_context() {
    let m = Model::new("ctx");
    let mut e = m.load(16).unwrap();
    assert_eq!(e.max_ctx, 16);
    let prompt: Vec<u32> = (1..=20).collect();
    let err = e
        .generate(&prompt, 1, &mut greedy(), None, false, &mut |_| true)
        .unwrap_err()
        .to_string();
    assert_names(&err, &["context", "16", "20"]);
    // fits alone, but not with the tokens asked for
    let err = e
        .generate(&prompt[..10], 10, &mut greedy(), None, false, &mut |_| true)
        .unwrap_err()
        .to_string();
    assert_names(&err, &["context", "16"]);
    // through forward, on a cache that is already partly full
    let mut cache = e.new_cache().unwrap();
    e.forward(&mut cache, &prompt[..10], wgllm::model::Logits::Last, &mut |_, _, _| {
        Ok(())
    })
    .unwrap();
    let err = e
        .forward(&mut cache, &prompt[..10], wgllm::model::Logits::Last, &mut |_, _, _| {
            Ok(())
        })
        .unwrap_err()
        .to_string();
    assert_names(&err, &["context", "16"]);
    // an empty prompt is refused by name
    let err = e
        .generate(&[], 1, &mut greedy(), None, false, &mut |_| true)
        .unwrap_err()
        .to_string();
    assert_names(&err, &["empty prompt"]);
    // the refusals left the engine usable
    let steps = e
        .generate(&prompt[..8], 8, &mut greedy(), None, false, &mut |_| true)
        .unwrap();
    assert_eq!(steps.len(), 8);
}

#[test]
fn token_id_outside_the_vocabulary() {
    let m = Model::new("vocab");
    let mut e = m.load(64).unwrap();
    for bad in [512u32, 513, 100_000, u32::MAX] {
        let err = e
            .generate(&[1, 2, bad, 3], 2, &mut greedy(), None, false, &mut |_| true)
            .unwrap_err()
            .to_string();
        assert_names(&err, &[&format!("token id {bad}"), "512"]);
    }
    assert_eq!(
        e.generate(&[511], 1, &mut greedy(), None, false, &mut |_| true)
            .unwrap()
            .len(),
        1
    );
}

// ---------------------------------------------------------------------------------------------
// 12: tokenizer files
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_tokenizer_still_generates_from_ids() {
    let m = Model::new("no-tok");
    std::fs::remove_file(m.path("tokenizer.json")).unwrap();
    let mut e = m
        .load(512)
        .unwrap_or_else(|e| panic!("a model without tokenizer.json must load: {e}"));
    assert!(e.tokenizer.is_none());
    let steps = e
        .generate(&[1, 2, 3, 4], 5, &mut greedy(), Some(3), false, &mut |_| true)
        .unwrap();
    assert_eq!(steps.len(), 5);
    assert!(steps
        .iter()
        .all(|s| (s.token as usize) < 512 && s.logprob.is_some() && s.top.len() == 3));
}

#[test]
fn corrupt_tokenizer_files_are_named() {
    let m = Model::new("bad-tok");
    std::fs::write(m.path("tokenizer.json"), "{\"model\": ").unwrap();
    assert_names(&m.load_err(), &["tokenizer.json"]);
    let m = Model::new("bad-tokcfg");
    std::fs::write(m.path("tokenizer_config.json"), "{\"chat_template\": ").unwrap();
    assert_names(&m.load_err(), &["tokenizer_config.json"]);
    let m = Model::new("bad-gencfg");
    std::fs::write(m.path("generation_config.json"), "{\"eos_token_id\": ").unwrap();
    assert_names(&m.load_err(), &["generation_config.json"]);
}

// ---------------------------------------------------------------------------------------------
// a sharded checkpoint (model.safetensors.index.json) loads and generates the same tokens
// ---------------------------------------------------------------------------------------------

#[test]
fn sharded_index_loads_like_the_single_file() {
    let m = Model::new("sharded");
    let whole = SafeFile::read(&m.path("model.safetensors"));
    let names: Vec<String> = whole.header.keys().filter(|k| *k != "__metadata__").cloned().collect();
    let mut map = Map::new();
    for (shard, file) in ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
        .iter()
        .enumerate()
    {
        let mut header = Map::new();
        let mut data = Vec::new();
        for n in names
            .iter()
            .filter(|n| (n.contains("layers.0.") || n.contains("embed")) == (shard == 0))
        {
            let (b, e) = whole.offsets(n);
            let mut t = whole.header[n].as_object().unwrap().clone();
            t.insert(
                "data_offsets".into(),
                serde_json::json!([data.len(), data.len() + (e - b) as usize]),
            );
            data.extend_from_slice(&whole.data[b as usize..e as usize]);
            header.insert(n.clone(), Value::Object(t));
            map.insert(n.clone(), Value::String(file.to_string()));
        }
        SafeFile { hlen: 0, header, data }.write(&m.path(file));
    }
    std::fs::remove_file(m.path("model.safetensors")).unwrap();
    std::fs::write(
        m.path("model.safetensors.index.json"),
        serde_json::to_vec(&serde_json::json!({"metadata": {}, "weight_map": map})).unwrap(),
    )
    .unwrap();
    let mut e = m.load(64).expect("sharded checkpoint loads");
    let got: Vec<u32> = e
        .generate(&[1, 2, 3], 6, &mut greedy(), None, false, &mut |_| true)
        .unwrap()
        .iter()
        .map(|s| s.token)
        .collect();
    let single = Model::new("single");
    let want: Vec<u32> = single
        .load(64)
        .unwrap()
        .generate(&[1, 2, 3], 6, &mut greedy(), None, false, &mut |_| true)
        .unwrap()
        .iter()
        .map(|s| s.token)
        .collect();
    assert_eq!(got, want);
}
