//! GGUF reading: a tiny writer (tests/common/gguf_writer.rs) makes synthetic files; valid ones
//! round-trip, and each broken one gets an error naming the file and the offending key, tensor or
//! field. The real SmolLM2 file and the GGUF tokenizer: tests/gguf_smollm2.rs.
mod common;

use common::gguf_writer::*;
use wgllm::dtype::DType;
use wgllm::model::gguf::{Gguf, Value};

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
