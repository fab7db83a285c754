//! Bad input gets a clear error naming the file and the tensor or field: never a panic, never a
//! silent success. Each test copies the tiny golden model into a fresh temp dir, corrupts one
//! thing, and checks what `Engine::load` (or `generate`) says about it.
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use wgllm::backend::cpu::CpuBackend;
use wgllm::engine::sampler::{Sampler, Sampling};
use wgllm::engine::Engine;

const ST: &str = "model.safetensors";

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("goldens/qwen3-tiny/model")
}

/// A copy of the tiny model in a fresh temp dir, removed on drop.
struct Model {
    dir: PathBuf,
}

impl Model {
    fn new(tag: &str) -> Model {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "wgllm-bad-input-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(golden()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        Model { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    fn load(&self, max_ctx: usize) -> wgllm::Result<Engine> {
        Engine::load(&self.dir, Box::new(CpuBackend::new()), max_ctx, &mut |_, _| {})
    }
    /// The load error's Display string; a successful load fails the test.
    fn load_err(&self) -> String {
        match self.load(512) {
            Ok(_) => panic!("corrupted model in {} loaded without an error", self.dir.display()),
            Err(e) => e.to_string(),
        }
    }
    fn st(&self) -> SafeFile {
        SafeFile::read(&self.path(ST))
    }
    /// Rewrites config.json through `f`.
    fn edit_config(&self, f: impl FnOnce(&mut Map<String, Value>)) {
        let p = self.path("config.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(v.as_object_mut().unwrap());
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A safetensors file taken apart: 8-byte little-endian header length, JSON header, data section.
struct SafeFile {
    hlen: usize,
    header: Map<String, Value>,
    data: Vec<u8>,
}

impl SafeFile {
    fn read(path: &Path) -> SafeFile {
        let b = std::fs::read(path).unwrap();
        let hlen = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        let header: Value = serde_json::from_slice(&b[8..8 + hlen]).unwrap();
        SafeFile {
            hlen,
            header: header.as_object().unwrap().clone(),
            data: b[8 + hlen..].to_vec(),
        }
    }
    /// Re-serialises the header and pads it with spaces (as safetensors allows) to its old length
    /// when it fits, else to a multiple of 8; the data section follows unchanged.
    fn write(&self, path: &Path) {
        let mut h = serde_json::to_vec(&Value::Object(self.header.clone())).unwrap();
        let target = if h.len() <= self.hlen {
            self.hlen
        } else {
            h.len().div_ceil(8) * 8
        };
        h.resize(target, b' ');
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&h);
        out.extend_from_slice(&self.data);
        std::fs::write(path, out).unwrap();
    }
    fn tensor(&mut self, name: &str) -> &mut Map<String, Value> {
        self.header
            .get_mut(name)
            .unwrap_or_else(|| panic!("no tensor {name}"))
            .as_object_mut()
            .unwrap()
    }
    fn offsets(&self, name: &str) -> (u64, u64) {
        let o = self.header[name]["data_offsets"].as_array().unwrap();
        (o[0].as_u64().unwrap(), o[1].as_u64().unwrap())
    }
    fn set_offsets(&mut self, name: &str, b: u64, e: u64) {
        self.tensor(name)
            .insert("data_offsets".into(), serde_json::json!([b, e]));
    }
}

/// Fails with the whole message unless it contains every one of `parts`.
fn assert_names(err: &str, parts: &[&str]) {
    println!("  {err}");
    for p in parts {
        assert!(err.contains(p), "error does not mention {p:?}:\n  {err}");
    }
}

fn greedy() -> Sampler {
    Sampler::new(Sampling::default())
}

// ---------------------------------------------------------------------------------------------
// the untouched copy loads: every failure below is the corruption's doing
// ---------------------------------------------------------------------------------------------

#[test]
fn untouched_copy_loads_and_generates() {
    let m = Model::new("ok");
    let mut e = m.load(512).unwrap_or_else(|e| panic!("the golden copy must load: {e}"));
    let steps = e
        .generate(&[1, 2, 3], 3, &mut greedy(), None, false, &mut |_| true)
        .unwrap();
    assert_eq!(steps.len(), 3);
    // the helper's round trip (re-serialised, padded header) is itself a valid file
    let m = Model::new("roundtrip");
    m.st().write(&m.path(ST));
    m.load(512)
        .unwrap_or_else(|e| panic!("a re-serialised header must load: {e}"));
}

// ---------------------------------------------------------------------------------------------
// 1-3: truncation and the header length
// ---------------------------------------------------------------------------------------------

#[test]
fn truncated_in_the_data_section_names_a_tensor_past_the_end() {
    let m = Model::new("trunc-mid");
    let st = m.st();
    let cut = st.data.len() / 2;
    let bytes = std::fs::read(m.path(ST)).unwrap();
    std::fs::write(m.path(ST), &bytes[..8 + st.hlen + cut]).unwrap();
    let err = m.load_err();
    assert_names(&err, &[ST, "data_offsets", "run past the end"]);
    let cut_off: Vec<&String> = st
        .header
        .keys()
        .filter(|k| *k != "__metadata__" && st.offsets(k).1 > cut as u64)
        .collect();
    assert!(
        cut_off.iter().any(|k| err.contains(&format!("`{k}`"))),
        "error names none of the tensors cut off ({cut_off:?}):\n  {err}"
    );
}

#[test]
fn truncated_below_the_header_length() {
    for n in [0usize, 1, 5, 7] {
        let m = Model::new("trunc-8");
        let bytes = std::fs::read(m.path(ST)).unwrap();
        std::fs::write(m.path(ST), &bytes[..n]).unwrap();
        let err = m.load_err();
        assert_names(&err, &[ST, "truncated", &format!("{n} bytes"), "header length"]);
    }
}

#[test]
fn header_length_past_the_end_of_the_file() {
    for hlen in [
        u64::MAX,
        1 << 40,
        std::fs::metadata(golden().join(ST)).unwrap().len() - 7,
    ] {
        let m = Model::new("hlen");
        let mut bytes = std::fs::read(m.path(ST)).unwrap();
        bytes[..8].copy_from_slice(&hlen.to_le_bytes());
        std::fs::write(m.path(ST), &bytes).unwrap();
        let err = m.load_err();
        assert_names(&err, &[ST, "header length", &hlen.to_string(), "past the end"]);
    }
}

#[test]
fn header_that_is_not_json_or_not_an_object() {
    for header in [&b"{\"a\": [1, 2"[..], b"\xff\xfe\x00garbage", b"[1, 2, 3]", b""] {
        let m = Model::new("hdr");
        let data = m.st().data;
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header);
        out.extend_from_slice(&data);
        std::fs::write(m.path(ST), out).unwrap();
        let err = m.load_err();
        assert_names(&err, &[ST, "header"]);
    }
}

// ---------------------------------------------------------------------------------------------
// 4-5: offsets
// ---------------------------------------------------------------------------------------------

#[test]
fn tensor_offsets_out_of_range() {
    let name = "model.layers.1.self_attn.k_norm.weight";
    // past the end, size still consistent with the shape
    let m = Model::new("offs");
    let mut st = m.st();
    let (b, e) = st.offsets(name);
    let end = st.data.len() as u64;
    st.set_offsets(name, end, end + (e - b));
    st.write(&m.path(ST));
    assert_names(
        &m.load_err(),
        &[ST, &format!("`{name}`"), "data_offsets", "past the end"],
    );

    // so large that data start + end overflows
    let m = Model::new("offs-huge");
    let mut st = m.st();
    st.set_offsets(name, u64::MAX - (e - b), u64::MAX);
    st.write(&m.path(ST));
    assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "data_offsets"]);

    // backwards
    let m = Model::new("offs-back");
    let mut st = m.st();
    st.set_offsets(name, e, b);
    st.write(&m.path(ST));
    assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "data_offsets", "backwards"]);

    // not integers, or not a pair
    for bad in [
        serde_json::json!([-1, 127]),
        serde_json::json!([0.5, 128.5]),
        serde_json::json!([b]),
        serde_json::json!("0-128"),
    ] {
        let m = Model::new("offs-type");
        let mut st = m.st();
        st.tensor(name).insert("data_offsets".into(), bad.clone());
        st.write(&m.path(ST));
        assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "data_offsets"]);
    }
}

#[test]
fn overlapping_tensors() {
    // k_norm (128 bytes) slides back onto the tail of post_attention_layernorm; both sizes still
    // match their shapes and both ranges stay inside the file
    let (a, b) = (
        "model.layers.0.post_attention_layernorm.weight",
        "model.layers.0.self_attn.k_norm.weight",
    );
    let m = Model::new("overlap");
    let mut st = m.st();
    let (_, a_end) = st.offsets(a);
    let (kb, ke) = st.offsets(b);
    assert_eq!(a_end, kb, "the golden layout changed");
    st.set_offsets(b, kb - 64, ke - 64);
    st.write(&m.path(ST));
    let err = m.load_err();
    assert_names(&err, &[ST, "overlap", &format!("`{a}`"), &format!("`{b}`")]);

    // and two tensors on exactly the same bytes
    let (a, b) = (
        "model.layers.2.self_attn.q_norm.weight",
        "model.layers.2.self_attn.k_norm.weight",
    );
    let m = Model::new("overlap-same");
    let mut st = m.st();
    let (qb, qe) = st.offsets(a);
    st.set_offsets(b, qb, qe);
    st.write(&m.path(ST));
    assert_names(&m.load_err(), &[ST, "overlap", &format!("`{a}`"), &format!("`{b}`")]);
}

// ---------------------------------------------------------------------------------------------
// 6: dtype
// ---------------------------------------------------------------------------------------------

#[test]
fn dtype_that_disagrees() {
    let name = "model.norm.weight"; // BF16 [128], 256 bytes
                                    // an unknown dtype string
    let m = Model::new("dtype-unknown");
    let mut st = m.st();
    st.tensor(name).insert("dtype".into(), "F8_E9".into());
    st.write(&m.path(ST));
    assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "F8_E9"]);

    // I32 with a byte size consistent with its (new) shape: the file is self-consistent, the
    // model refuses an integer weight
    let m = Model::new("dtype-int");
    let mut st = m.st();
    st.tensor(name).insert("dtype".into(), "I32".into());
    st.tensor(name).insert("shape".into(), serde_json::json!([64]));
    st.write(&m.path(ST));
    assert_names(
        &m.load_err().to_lowercase(),
        &[ST, &format!("`{name}`"), "i32", "not a float"],
    );

    // F32 where the bytes only hold BF16: the size no longer matches
    let m = Model::new("dtype-size");
    let mut st = m.st();
    st.tensor(name).insert("dtype".into(), "F32".into());
    st.write(&m.path(ST));
    assert_names(
        &m.load_err().to_lowercase(),
        &[ST, &format!("`{name}`"), "f32", "256 bytes"],
    );

    // dtype missing, or not a string
    for bad in [None, Some(Value::from(7))] {
        let m = Model::new("dtype-missing");
        let mut st = m.st();
        match bad {
            None => st.tensor(name).remove("dtype"),
            Some(v) => st.tensor(name).insert("dtype".into(), v),
        };
        st.write(&m.path(ST));
        assert_names(
            &m.load_err(),
            &[ST, &format!("`{name}`"), "dtype missing or not a string"],
        );
    }
}

#[test]
fn shape_entries_that_are_bad_in_the_file() {
    let name = "model.layers.0.input_layernorm.weight";
    for bad in [
        serde_json::json!([128.0]),
        serde_json::json!([-128]),
        serde_json::json!("128"),
        serde_json::json!([1u64 << 40, 1u64 << 40]),
    ] {
        let m = Model::new("shape-type");
        let mut st = m.st();
        st.tensor(name).insert("shape".into(), bad.clone());
        st.write(&m.path(ST));
        assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "shape"]);
    }
}

// ---------------------------------------------------------------------------------------------
// 7-8: the checkpoint against config.json
// ---------------------------------------------------------------------------------------------

#[test]
fn shape_that_disagrees_with_config() {
    let m = Model::new("cfg-hidden");
    m.edit_config(|c| {
        c.insert("hidden_size".into(), 64.into());
    });
    assert_names(
        &m.load_err(),
        &[
            ST,
            "`model.embed_tokens.weight`",
            "config.json",
            "[512x128]",
            "[512x64]",
        ],
    );

    let m = Model::new("cfg-inter");
    m.edit_config(|c| {
        c.insert("intermediate_size".into(), 512.into());
    });
    assert_names(
        &m.load_err(),
        &[
            ST,
            "`model.layers.0.mlp.gate_proj.weight`",
            "config.json",
            "[256x128]",
            "[512x128]",
        ],
    );

    let m = Model::new("cfg-vocab");
    m.edit_config(|c| {
        c.insert("vocab_size".into(), 1000.into());
    });
    assert_names(&m.load_err(), &[ST, "`model.embed_tokens.weight`", "config.json"]);

    // and a tensor whose shape in the file was changed (same bytes: [128, 256] -> [256, 128])
    let name = "model.layers.1.mlp.down_proj.weight";
    let m = Model::new("file-shape");
    let mut st = m.st();
    st.tensor(name).insert("shape".into(), serde_json::json!([256, 128]));
    st.write(&m.path(ST));
    assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "config.json"]);
}

#[test]
fn missing_tensor() {
    for name in [
        "model.norm.weight",
        "model.layers.2.self_attn.v_proj.weight",
        "model.embed_tokens.weight",
    ] {
        let m = Model::new("missing");
        let mut st = m.st();
        st.header.remove(name).unwrap();
        st.write(&m.path(ST));
        assert_names(&m.load_err(), &[ST, &format!("`{name}`"), "missing"]);
    }
    // untied embeddings need lm_head.weight, which this checkpoint does not have
    let m = Model::new("missing-head");
    m.edit_config(|c| {
        c.insert("tie_word_embeddings".into(), false.into());
    });
    assert_names(&m.load_err(), &[ST, "`lm_head.weight`", "missing"]);
    // more layers in config.json than in the file
    let m = Model::new("missing-layer");
    m.edit_config(|c| {
        c.insert("num_hidden_layers".into(), 4.into());
    });
    assert_names(&m.load_err(), &[ST, "`model.layers.3.", "missing"]);
    // an absurd layer count is refused by name at once (it used to build a 10^13-entry tensor list
    // before looking at the file: hours of allocation, then out of memory)
    let m = Model::new("missing-layers-huge");
    m.edit_config(|c| {
        c.insert("num_hidden_layers".into(), 1_000_000_000_000u64.into());
    });
    assert_names(&m.load_err(), &[ST, "`model.layers.999999999999.", "missing"]);
}

#[test]
fn no_safetensors_at_all() {
    let m = Model::new("no-st");
    std::fs::remove_file(m.path(ST)).unwrap();
    assert_names(&m.load_err(), &[ST]);
}

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
