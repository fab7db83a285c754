//! A tiny GGUF writer for synthetic files (tests/gguf.rs, tests/gguf_smollm2.rs): valid ones, and
//! the means to break them one field at a time.
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use wgllm::dtype::DType;
use wgllm::model::gguf::{Gguf, Value};

pub fn gstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub fn type_id(v: &Value) -> u32 {
    match v {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::Str(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

pub fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(*x as u8),
        Value::Str(s) => gstr(out, s),
        Value::Array(a) => {
            out.extend_from_slice(&a.first().map_or(4, type_id).to_le_bytes());
            out.extend_from_slice(&(a.len() as u64).to_le_bytes());
            a.iter().for_each(|e| put_value(out, e));
        }
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

pub struct T {
    pub name: String,
    pub ne: Vec<u64>,
    pub ty: u32,
    pub offset: u64,
}

pub struct W {
    pub magic: [u8; 4],
    pub version: u32,
    /// Raw encoded key/values (key, type id, value bytes).
    pub kv: Vec<(String, u32, Vec<u8>)>,
    pub tensors: Vec<T>,
    pub align: usize,
    pub data_len: usize,
    pub n_tensors: Option<u64>,
    pub n_kv: Option<u64>,
}

impl W {
    /// Two tensors: `a` f32 [3, 4] (ggml ne [4, 3]) and `b` q8_0 [2, 32], offsets packed and aligned.
    pub fn valid() -> W {
        let mut w = W {
            magic: *b"GGUF",
            version: 3,
            kv: Vec::new(),
            tensors: Vec::new(),
            align: 32,
            data_len: 0,
            n_tensors: None,
            n_kv: None,
        };
        w.kv("general.architecture", Value::Str("llama".into()));
        w.kv("llama.block_count", Value::U32(2));
        w.kv("llama.rope.freq_base", Value::F32(10000.0));
        w.kv(
            "tokenizer.ggml.tokens",
            Value::Array(vec![Value::Str("a".into()), Value::Str("b".into())]),
        );
        w.kv(
            "tokenizer.ggml.token_type",
            Value::Array(vec![Value::I32(1), Value::I32(3)]),
        );
        w.kv("tokenizer.ggml.add_bos_token", Value::Bool(false));
        w.kv(
            "nested",
            Value::Array(vec![
                Value::Array(vec![Value::U8(1), Value::U8(2)]),
                Value::Array(vec![Value::U8(3)]),
            ]),
        );
        for v in [
            Value::I8(-1),
            Value::U16(2),
            Value::I16(-3),
            Value::I32(-4),
            Value::U64(5),
            Value::I64(-6),
            Value::F64(0.5),
        ] {
            w.kv(&format!("all.{}", type_id(&v)), v);
        }
        w.tensor("a", &[4, 3], 0);
        w.tensor("b", &[32, 2], 8);
        w
    }
    pub fn kv(&mut self, k: &str, v: Value) {
        let mut b = Vec::new();
        put_value(&mut b, &v);
        self.kv.push((k.into(), type_id(&v), b));
    }
    /// Adds a tensor at the next aligned offset, sized for its type.
    pub fn tensor(&mut self, name: &str, ne: &[u64], ty: u32) {
        let offset = self.data_len.div_ceil(self.align) * self.align;
        let n: u64 = ne.iter().product();
        let bytes = DType::from_ggml_type(ty).map_or(4 * n as usize, |d| d.nbytes(n as usize));
        self.data_len = offset + bytes;
        self.tensors.push(T {
            name: name.into(),
            ne: ne.to_vec(),
            ty,
            offset: offset as u64,
        });
    }
    pub fn bytes(&self) -> Vec<u8> {
        let mut o = Vec::new();
        o.extend_from_slice(&self.magic);
        o.extend_from_slice(&self.version.to_le_bytes());
        o.extend_from_slice(&self.n_tensors.unwrap_or(self.tensors.len() as u64).to_le_bytes());
        o.extend_from_slice(&self.n_kv.unwrap_or(self.kv.len() as u64).to_le_bytes());
        for (k, t, v) in &self.kv {
            gstr(&mut o, k);
            o.extend_from_slice(&t.to_le_bytes());
            o.extend_from_slice(v);
        }
        for t in &self.tensors {
            gstr(&mut o, &t.name);
            o.extend_from_slice(&(t.ne.len() as u32).to_le_bytes());
            t.ne.iter().for_each(|d| o.extend_from_slice(&d.to_le_bytes()));
            o.extend_from_slice(&t.ty.to_le_bytes());
            o.extend_from_slice(&t.offset.to_le_bytes());
        }
        o.resize(o.len().div_ceil(self.align) * self.align, 0);
        let d0 = o.len();
        o.extend((0..self.data_len).map(|i| (i % 251) as u8));
        assert_eq!(o.len(), d0 + self.data_len);
        o
    }
}

pub fn tmp(tag: &str, bytes: &[u8]) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("wgllm-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{tag}-{}.gguf", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Opens the bytes as a file; the error must name the file and contain every `needle`.
pub fn refused(tag: &str, bytes: &[u8], needles: &[&str]) -> String {
    let p = tmp(tag, bytes);
    let msg = match Gguf::open(&p) {
        Ok(_) => panic!("{tag}: opened a broken file"),
        Err(e) => e.to_string(),
    };
    assert!(
        msg.contains(&p.display().to_string()),
        "{tag}: error does not name the file: {msg}"
    );
    for n in needles {
        assert!(msg.contains(n), "{tag}: error lacks {n:?}: {msg}");
    }
    let _ = std::fs::remove_file(&p);
    msg
}

/// `W::valid()` with its tokenizer replaced by a tiny byte-level BPE: "h" "i" "hi" "Ġ" "Ġhi", a
/// control token `<|end|>` (id 5, the EOS), a user-defined `<think>`, "日" (outside the byte
/// alphabet), two merges and a chat template that wraps each message in <>. `pre` is the
/// pre-tokenizer name.
pub fn tiny_bpe_tokenizer(pre: &str) -> W {
    let mut w = W::valid();
    w.kv.retain(|(k, _, _)| !k.starts_with("tokenizer."));
    let toks = ["h", "i", "hi", "\u{120}", "\u{120}hi", "<|end|>", "<think>", "日"];
    w.kv("tokenizer.ggml.model", Value::Str("gpt2".into()));
    w.kv("tokenizer.ggml.pre", Value::Str(pre.into()));
    w.kv(
        "tokenizer.ggml.tokens",
        Value::Array(toks.iter().map(|t| Value::Str(t.to_string())).collect()),
    );
    w.kv(
        "tokenizer.ggml.token_type",
        Value::Array([1, 1, 1, 1, 1, 3, 4, 1].iter().map(|&t| Value::I32(t)).collect()),
    );
    w.kv(
        "tokenizer.ggml.merges",
        Value::Array(
            ["h i", "\u{120} hi"]
                .iter()
                .map(|m| Value::Str(m.to_string()))
                .collect(),
        ),
    );
    w.kv("tokenizer.ggml.eos_token_id", Value::U32(5));
    w.kv(
        "tokenizer.chat_template",
        Value::Str("{% for m in messages %}<{{ m.content }}>{% endfor %}{{ eos_token }}".into()),
    );
    w
}
