//! A copy of the tiny golden model to corrupt (tests/bad_input.rs, tests/bad_config.rs), a
//! safetensors file taken apart, and the assertion that an error names what it should.
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use wgllm::backend::cpu::CpuBackend;
use wgllm::engine::sampler::{Sampler, Sampling};
use wgllm::engine::Engine;

pub const ST: &str = "model.safetensors";

pub fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("goldens/qwen3-tiny/model")
}

/// A copy of the tiny model in a fresh temp dir, removed on drop.
pub struct Model {
    pub dir: PathBuf,
}

impl Model {
    pub fn new(tag: &str) -> Model {
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
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    pub fn load(&self, max_ctx: usize) -> wgllm::Result<Engine> {
        Engine::load(&self.dir, Box::new(CpuBackend::new()), max_ctx, &mut |_, _| {})
    }
    /// The load error's Display string; a successful load fails the test.
    pub fn load_err(&self) -> String {
        match self.load(512) {
            Ok(_) => panic!("corrupted model in {} loaded without an error", self.dir.display()),
            Err(e) => e.to_string(),
        }
    }
    pub fn st(&self) -> SafeFile {
        SafeFile::read(&self.path(ST))
    }
    /// Rewrites config.json through `f`.
    pub fn edit_config(&self, f: impl FnOnce(&mut Map<String, Value>)) {
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
pub struct SafeFile {
    pub hlen: usize,
    pub header: Map<String, Value>,
    pub data: Vec<u8>,
}

impl SafeFile {
    pub fn read(path: &Path) -> SafeFile {
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
    pub fn write(&self, path: &Path) {
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
    pub fn tensor(&mut self, name: &str) -> &mut Map<String, Value> {
        self.header
            .get_mut(name)
            .unwrap_or_else(|| panic!("no tensor {name}"))
            .as_object_mut()
            .unwrap()
    }
    pub fn offsets(&self, name: &str) -> (u64, u64) {
        let o = self.header[name]["data_offsets"].as_array().unwrap();
        (o[0].as_u64().unwrap(), o[1].as_u64().unwrap())
    }
    pub fn set_offsets(&mut self, name: &str, b: u64, e: u64) {
        self.tensor(name)
            .insert("data_offsets".into(), serde_json::json!([b, e]));
    }
}

/// Fails with the whole message unless it contains every one of `parts`.
pub fn assert_names(err: &str, parts: &[&str]) {
    println!("  {err}");
    for p in parts {
        assert!(err.contains(p), "error does not mention {p:?}:\n  {err}");
    }
}

pub fn greedy() -> Sampler {
    Sampler::new(Sampling::default())
}
