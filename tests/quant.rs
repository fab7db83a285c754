//! GGUF block-quantized types: the CPU reference (src/quant/) against the `gguf` package's goldens
//! (goldens/quant-<type>/, written by tools/oracle/quant_goldens.py), bit for bit.
//!
//! - dequantization: every value of blocks.bin equals values.bin in its f32 bits;
//! - quantization (q8_0, q4_0, q4_1): quantize(quant_input.bin) equals quantized.bin byte for byte;
//! - round trip (all six): dequantize(quantize(x)) within a per-type bound of x;
//! - random_blocks: finite values.
//!
//! A comparison that compared nothing fails.
use serde_json::Value;
use std::path::PathBuf;
use wgllm::dtype::DType;
use wgllm::parity::golden;
use wgllm::quant::{dequant_block, dequantize, quantize, random_blocks};
use wgllm::util::Rng;

fn case_dir(dt: DType) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("goldens")
        .join(format!("quant-{}", dt.name()))
}

/// The case's manifest, checked by the golden walker (listed files present, sha256 as recorded).
fn manifest(dt: DType) -> Value {
    let path = case_dir(dt).join("manifest.json");
    let m = golden::check(&path, &[]).unwrap_or_else(|e| panic!("{dt}: {e}"));
    assert_eq!(
        (m.kind.as_str(), m.model.as_str()),
        ("dequant", dt.name()),
        "{dt}: manifest kind/op"
    );
    m.json
}

fn read(dt: DType, file: &str) -> Vec<u8> {
    let p = case_dir(dt).join(file);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{dt}: {}: {e}", p.display()))
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// "random" / "random wide-range scales" / the manifest's edge-case name for block `i`.
fn label(args: &Value, key: &str, i: usize) -> String {
    if let Some(l) = args
        .get(key)
        .and_then(|e| e.get(i.to_string()))
        .and_then(|l| l.as_str())
    {
        return l.to_string();
    }
    let r = args["n_random"].as_u64().unwrap_or(0) as usize;
    if i < r {
        "random".into()
    } else {
        "random (wide-range scales)".into()
    }
}

#[test]
fn dequantize_matches_gguf_bit_exact() {
    let mut total = 0usize;
    let mut report = Vec::new();
    for dt in DType::QUANTS {
        let m = manifest(dt);
        let args = &m["args"];
        let (be, bb) = dt.block();
        assert_eq!(
            (args["block_elems"].as_u64(), args["block_bytes"].as_u64()),
            (Some(be as u64), Some(bb as u64)),
            "{dt}: block geometry"
        );
        assert_eq!(
            args["ggml_type"].as_u64(),
            Some(dt.ggml_type() as u64),
            "{dt}: ggml type id"
        );
        let blocks = read(dt, "blocks.bin");
        let want = f32s(&read(dt, "values.bin"));
        assert_eq!(blocks.len() % bb, 0, "{dt}: blocks.bin is not whole blocks");
        let nblk = blocks.len() / bb;
        assert_eq!(want.len(), nblk * be, "{dt}: values.bin length");
        assert!(
            want.iter().all(|v| v.is_finite()),
            "{dt}: values.bin holds a non-finite value"
        );
        let got = dequantize(dt, &blocks);
        assert_eq!(got.len(), want.len(), "{dt}: dequantize length");
        let mut per_block = vec![0f32; be];
        let mut n = 0usize;
        for b in 0..nblk {
            dequant_block(dt, &blocks[b * bb..(b + 1) * bb], &mut per_block);
            for e in 0..be {
                let (g, w) = (got[b * be + e], want[b * be + e]);
                assert!(
                    g.to_bits() == w.to_bits(),
                    "{dt}: block {b} ({}) element {e}: ours {g:e} ({:#010x}), gguf {w:e} ({:#010x})",
                    label(args, "edge_blocks", b),
                    g.to_bits(),
                    w.to_bits()
                );
                assert_eq!(
                    per_block[e].to_bits(),
                    g.to_bits(),
                    "{dt}: block {b} element {e}: dequant_block differs from dequantize"
                );
                n += 1;
            }
        }
        assert!(n > 0, "{dt}: compared no values");
        report.push(format!("{dt}: {n} values in {nblk} blocks"));
        total += n;
    }
    assert!(total > 0, "compared no values");
    println!("bit-exact vs gguf: {} ({total} values)", report.join(", "));
}

#[test]
fn legacy_quantizers_match_gguf_bit_exact() {
    let mut total = 0usize;
    for dt in [DType::Q8_0, DType::Q4_0, DType::Q4_1] {
        let m = manifest(dt);
        let args = &m["args"];
        let (be, bb) = dt.block();
        let x = f32s(&read(dt, "quant_input.bin"));
        let want = read(dt, "quantized.bin");
        assert_eq!(x.len() % be, 0, "{dt}: quant_input.bin is not whole blocks");
        assert_eq!(want.len(), x.len() / be * bb, "{dt}: quantized.bin length");
        let got = quantize(dt, &x);
        assert_eq!(got.len(), want.len(), "{dt}: quantize length");
        let mut n = 0;
        for (b, (g, w)) in got.chunks_exact(bb).zip(want.chunks_exact(bb)).enumerate() {
            if let Some(i) = (0..bb).find(|&i| g[i] != w[i]) {
                panic!("{dt}: quantized block {b} ({}) byte {i}: ours {:#04x}, gguf {:#04x}\n  ours {g:02x?}\n  gguf {w:02x?}", label(args, "quant_edge_blocks", b), g[i], w[i]);
            }
            n += bb;
        }
        assert!(n > 0, "{dt}: compared no bytes");
        println!("{dt}: {n} quantized bytes ({} blocks) equal gguf's", n / bb);
        total += n;
    }
    assert!(total > 0);
}

/// Per-type bound on |dequantize(quantize(x)) - x| relative to the block's max |x|.
fn round_trip_bound(dt: DType) -> f32 {
    match dt {
        DType::Q8_0 => 0.5 / 127.0 + 3e-3, // small blocks get a subnormal f16 d
        DType::Q4_0 => 1.0 / 8.0 + 1e-2,   // the +max side clips at 15: one full step
        DType::Q4_1 => 0.5 / 15.0 * 2.0 + 1e-2,
        DType::Q4K => 0.12,
        DType::Q6K => 1.5 / 32.0 + 1e-2, // -max of a sub-block clips at +31: one step, plus i8 sub-scale rounding
        DType::IQ4NL => 0.12,
        _ => unreachable!(),
    }
}

#[test]
fn quantize_dequantize_round_trip_is_close() {
    for dt in DType::QUANTS {
        let (be, _) = dt.block();
        let mut r = Rng::new(42 + dt.ggml_type() as u64);
        let n = 64 * be + be / 2 + 3; // a partial last block: padded with zeros
        let x: Vec<f32> = (0..n)
            .map(|i| (r.normal() * 10f64.powi((i / be) as i32 % 5 - 3)) as f32)
            .collect();
        let y = dequantize(dt, &quantize(dt, &x));
        assert_eq!(y.len(), n.div_ceil(be) * be, "{dt}: round-trip length");
        let mut worst = 0f32;
        let mut count = 0;
        for (b, (xb, yb)) in x.chunks(be).zip(y.chunks(be)).enumerate() {
            let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
            for (e, (a, q)) in xb.iter().zip(yb).enumerate() {
                let err = (a - q).abs() / amax;
                assert!(
                    err <= round_trip_bound(dt),
                    "{dt}: block {b} element {e}: {a} -> {q}, error {err} of max |x| (bound {})",
                    round_trip_bound(dt)
                );
                worst = worst.max(err);
                count += 1;
            }
            assert!(
                yb[xb.len()..].iter().all(|v| v.abs() <= amax * round_trip_bound(dt)),
                "{dt}: padding not near zero"
            );
        }
        assert!(count > 0, "{dt}: compared nothing");
        println!("{dt}: {count} values, worst error {worst:.4} of the block's max |x|");
    }
}

#[test]
fn random_blocks_dequantize_to_finite_values() {
    for dt in DType::QUANTS {
        let (be, bb) = dt.block();
        let b = random_blocks(dt, 100 * be + 1, 5);
        assert_eq!(b.len(), 101 * bb, "{dt}: random_blocks rounds up to whole blocks");
        let v = dequantize(dt, &b);
        assert_eq!(v.len(), 101 * be);
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            panic!("{dt}: random block {} element {} is {}", i / be, i % be, v[i]);
        }
        let amax = v.iter().fold(0f32, |a, x| a.max(x.abs()));
        assert!(
            amax > 0.0 && amax < 1e4,
            "{dt}: random values' max |x| {amax} outside a sane range"
        );
    }
}
