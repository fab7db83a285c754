//! Qwen3.5 (Gated DeltaNet hybrid) beyond the golden gate: the vision-language checkpoint layout
//! loads its text part; the hybrid cache carries state across prefills (a prompt in pieces equals
//! the prompt at once, on cpu and every wgpu adapter); bad configs and tensors are refused by
//! file and field / tensor name.
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use wgllm::backend::{cpu::CpuBackend, wgpu::WgpuBackend, Backend};
use wgllm::engine::sampler::{Sampler, Sampling};
use wgllm::engine::Engine;
use wgllm::model::Logits;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("goldens/qwen3_5-tiny/model")
}

/// A copy of the tiny Qwen3.5 in a fresh temp dir, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "wgllm-q35-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        for e in std::fs::read_dir(golden()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), d.join(e.file_name())).unwrap();
        }
        Dir(d)
    }
    fn config(&self) -> Map<String, Value> {
        serde_json::from_str::<Value>(&std::fs::read_to_string(self.0.join("config.json")).unwrap())
            .unwrap()
            .as_object()
            .unwrap()
            .clone()
    }
    fn set_config(&self, c: Map<String, Value>) {
        std::fs::write(
            self.0.join("config.json"),
            serde_json::to_string_pretty(&Value::Object(c)).unwrap(),
        )
        .unwrap();
    }
    /// The safetensors header and data section; `write_st` puts them back (header re-serialised).
    fn st(&self) -> (Map<String, Value>, Vec<u8>) {
        let b = std::fs::read(self.0.join("model.safetensors")).unwrap();
        let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        let h: Value = serde_json::from_slice(&b[8..8 + n]).unwrap();
        (h.as_object().unwrap().clone(), b[8 + n..].to_vec())
    }
    fn write_st(&self, h: &Map<String, Value>, data: &[u8]) {
        let mut hb = serde_json::to_vec(&Value::Object(h.clone())).unwrap();
        hb.resize(hb.len().div_ceil(8) * 8, b' ');
        let mut out = (hb.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&hb);
        out.extend_from_slice(data);
        std::fs::write(self.0.join("model.safetensors"), out).unwrap();
    }
    fn load(&self, dev: Box<dyn Backend>) -> wgllm::Result<Engine> {
        Engine::load(&self.0, dev, 512, &mut |_, _| {})
    }
    fn load_err(&self) -> String {
        match self.load(Box::new(CpuBackend::new())) {
            Ok(_) => panic!("a broken model in {} loaded", self.0.display()),
            Err(e) => e.to_string(),
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn assert_names(err: &str, parts: &[&str]) {
    println!("  {err}");
    for p in parts {
        assert!(err.contains(p), "error does not mention {p:?}:\n  {err}");
    }
}

fn tokens(e: &mut Engine, prompt: &[u32], n: usize) -> Vec<u32> {
    e.generate(
        prompt,
        n,
        &mut Sampler::new(Sampling::default()),
        None,
        false,
        &mut |_| true,
    )
    .unwrap()
    .iter()
    .map(|s| s.token)
    .collect()
}

fn devices() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(CpuBackend::new())];
    v.extend(WgpuBackend::all().into_iter().map(|b| Box::new(b) as Box<dyn Backend>));
    v
}

#[test]
fn vision_language_layout_loads_its_text_part() {
    let text = Dir::new("text");
    let want = tokens(
        &mut text.load(Box::new(CpuBackend::new())).unwrap(),
        &[5, 17, 300, 2, 9],
        8,
    );
    // the VL checkpoint: config wrapped in text_config, weights under model.language_model., a
    // vision tower and an MTP head beside them (not read)
    let vl = Dir::new("vl");
    let mut tc = vl.config();
    tc.insert("model_type".into(), "qwen3_5_text".into());
    vl.set_config(
        json!({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"], "tie_word_embeddings": true,
               "text_config": tc, "vision_config": {"depth": 1, "hidden_size": 8}})
        .as_object()
        .unwrap()
        .clone(),
    );
    let (h, mut data) = vl.st();
    let mut h2 = Map::new();
    for (k, v) in h {
        let k = if k == "__metadata__" {
            k
        } else {
            k.replacen("model.", "model.language_model.", 1)
        };
        h2.insert(k, v);
    }
    for extra in ["model.visual.patch_embed.proj.weight", "mtp.fc.weight"] {
        let b = data.len();
        data.extend_from_slice(&[0u8; 16]);
        h2.insert(
            extra.into(),
            json!({"dtype": "F32", "shape": [4], "data_offsets": [b, b + 16]}),
        );
    }
    vl.write_st(&h2, &data);
    let got = tokens(
        &mut vl.load(Box::new(CpuBackend::new())).unwrap(),
        &[5, 17, 300, 2, 9],
        8,
    );
    assert_eq!(got, want);
}

/// Prefill of 100 tokens at once vs 37 + 63 (the second prefill continues the conv and recurrent
/// states and the KV cache: chunked delta rule from a non-zero state, attention with n_past > 0).
#[test]
fn prefill_in_pieces_equals_prefill_at_once() {
    let prompt: Vec<u32> = (0..100u32).map(|i| (i * 37 + 11) % 512).collect();
    for dev in devices() {
        let name = dev.name();
        let d = Dir::new("pieces");
        let mut e = d.load(dev).unwrap();
        let v = e.cfg.vocab_size;
        let mut cache = e.new_cache().unwrap();
        e.forward(&mut cache, &prompt, Logits::All, &mut |_, _, _| Ok(()))
            .unwrap();
        let whole = e.logits(100, 100).unwrap();
        let mut cache = e.new_cache().unwrap();
        e.forward(&mut cache, &prompt[..37], Logits::All, &mut |_, _, _| Ok(()))
            .unwrap();
        let a = e.logits(37, 37).unwrap();
        e.forward(&mut cache, &prompt[37..], Logits::All, &mut |_, _, _| Ok(()))
            .unwrap();
        let b = e.logits(63, 63).unwrap();
        let pieces: Vec<f32> = a.into_iter().chain(b).collect();
        let worst = whole
            .iter()
            .zip(&pieces)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        println!("  {name}: max |logit diff| {worst:.2e} over {} logits", 100 * v);
        assert!(worst < 1e-3, "{name}: prefill in pieces differs by {worst}");
    }
}

#[test]
fn bad_qwen3_5_config_fields_are_named() {
    type Edit = Box<dyn Fn(&mut Map<String, Value>)>;
    let cases: [(&str, Edit, &[&str]); 5] = [
        (
            "no-nk",
            Box::new(|c| drop(c.remove("linear_num_key_heads"))),
            &["config.json", "linear_num_key_heads", "missing"],
        ),
        (
            "short-types",
            Box::new(|c| drop(c["layer_types"].as_array_mut().unwrap().pop())),
            &["config.json", "layer_types", "3 entries"],
        ),
        (
            "bad-type",
            Box::new(|c| c["layer_types"][1] = "mamba".into()),
            &["config.json", "layer_types", "mamba"],
        ),
        (
            "no-gate",
            Box::new(|c| drop(c.insert("attn_output_gate".into(), false.into()))),
            &["config.json", "attn_output_gate"],
        ),
        (
            "odd-heads",
            Box::new(|c| drop(c.insert("linear_num_value_heads".into(), 3.into()))),
            &["config.json", "linear_num_value_heads"],
        ),
    ];
    for (tag, edit, parts) in cases {
        let d = Dir::new(tag);
        let mut c = d.config();
        edit(&mut c);
        d.set_config(c);
        assert_names(&d.load_err(), parts);
    }
}

#[test]
fn bad_qwen3_5_tensors_are_named() {
    // a conv weight whose shape disagrees with config.json
    let d = Dir::new("conv-shape");
    let (mut h, data) = d.st();
    h.get_mut("model.layers.1.linear_attn.conv1d.weight").unwrap()["shape"] = json!([256, 4, 1]);
    d.write_st(&h, &data);
    assert_names(
        &d.load_err(),
        &[
            "model.safetensors",
            "model.layers.1.linear_attn.conv1d.weight",
            "256x1x4",
        ],
    );
    // the full-attention layer's q_norm missing
    let d = Dir::new("no-qnorm");
    let (mut h, data) = d.st();
    h.remove("model.layers.3.self_attn.q_norm.weight");
    d.write_st(&h, &data);
    assert_names(
        &d.load_err(),
        &["model.safetensors", "model.layers.3.self_attn.q_norm.weight", "missing"],
    );
    // layer_types saying full attention where the checkpoint has linear attention
    let d = Dir::new("swapped");
    let mut c = d.config();
    c["layer_types"][0] = "full_attention".into();
    d.set_config(c);
    assert_names(&d.load_err(), &["model.layers.0.self_attn.q_proj.weight", "missing"]);
}
