//! A Qwen3 GGUF whose attn_v has another type than attn_q / attn_k, as llama.cpp's q4_k_m files
//! keep it in some layers: tests/fixtures/qwen3-tiny-q8_0-v-q4_0.gguf is goldens/qwen3-tiny/model
//! with every matrix in q8_0 but attn_v in q4_0 (tools/oracle/make_gguf_qwen3.py). q and k are
//! then stacked and v loaded apart, and a one-token step projects q and k in one linear and v
//! beside them into the same row before the fused attention (model/qwen3.rs `QkOne::attend`; the
//! CPU composes that op, so its steps take the split too). A prefill projects q, k and v apart:
//! the CPU's prefill is the reference, which its own steps and every wgpu adapter's prefill and
//! steps must give.
use std::path::{Path, PathBuf};
use wgllm::backend::{cpu::CpuBackend, wgpu::WgpuBackend, Backend};
use wgllm::engine::sampler::log_softmax;
use wgllm::engine::Engine;
use wgllm::model::Logits;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen3-tiny-q8_0-v-q4_0.gguf")
}

fn ids() -> Vec<u32> {
    (0..40u32).map(|i| (i * 2654435761u32 >> 7) % 509).collect()
}

/// Logprobs of every position: one forward over all of `ids`, or (`stepwise`) one token a step.
fn logprobs(dev: Box<dyn Backend>, ids: &[u32], stepwise: bool) -> Vec<Vec<f64>> {
    let p = fixture();
    let mut e = Engine::load(&p, dev, 128, &mut |_, _| {}).unwrap_or_else(|er| panic!("{}: {er}", p.display()));
    assert_eq!(e.cfg.model_type, "qwen3");
    let mut cache = e.new_cache().unwrap();
    let v = e.cfg.vocab_size;
    if !stepwise {
        e.forward(&mut cache, ids, Logits::All, &mut |_, _, _| Ok(())).unwrap();
        let l = e.logits(ids.len(), ids.len()).unwrap();
        return (0..ids.len()).map(|i| log_softmax(&l[i * v..(i + 1) * v])).collect();
    }
    ids.iter()
        .map(|&id| {
            e.forward(&mut cache, &[id], Logits::All, &mut |_, _, _| Ok(()))
                .unwrap();
            log_softmax(&e.logits(1, 1).unwrap())
        })
        .collect()
}

fn max_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0, f64::max)
}

#[test]
fn qwen3_gguf_v_of_another_type_same_on_every_device() {
    let ids = ids();
    let want = logprobs(Box::new(CpuBackend::new()), &ids, false);
    // the CPU's own steps agree with its prefill (the reference is one model)
    let d = max_diff(&want, &logprobs(Box::new(CpuBackend::new()), &ids, true));
    assert!(d <= 1e-4, "cpu: token by token differs from the prefill by {d:.3e}");
    let mut compared = 0;
    for (dev, again) in WgpuBackend::all().into_iter().zip(WgpuBackend::all()) {
        let name = dev.name();
        for (how, got) in [
            ("prefill", logprobs(Box::new(dev), &ids, false)),
            ("token by token", logprobs(Box::new(again), &ids, true)),
        ] {
            let d = max_diff(&want, &got);
            println!("{name}: {how}, 40 x 512 logprobs against cpu, max |diff| {d:.2e}");
            assert!(
                d <= 1e-4,
                "{name}: {how} differs from the CPU reference by {d:.3e} (> 1e-4)"
            );
            compared += 1;
        }
    }
    if compared == 0 {
        assert!(
            std::env::var("WGLLM_REQUIRE_GPU").map_or(true, |v| v != "1"),
            "no wgpu adapter and WGLLM_REQUIRE_GPU=1"
        );
        println!("no wgpu adapter: the cross-device check compared nothing (skipped)");
    }
}
