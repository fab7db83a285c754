//! Bad input gets a clear error naming the file and the tensor or field: never a panic, never a
//! silent success. Each test copies the tiny golden model into a fresh temp dir, corrupts one
//! thing, and checks what `Engine::load` (or `generate`) says about it. Here: the safetensors
//! files; tests/bad_config.rs: config.json, prompts, tokenizers, sharded checkpoints.
mod common;

use common::model_copy::*;
use serde_json::Value;

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
