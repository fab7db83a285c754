//! Llama from GGUF against Llama from safetensors: tests/fixtures/llama-tiny-bf16.gguf is
//! goldens/llama-tiny/model written the way llama.cpp's converter writes it (tools/oracle/
//! make_gguf.py: GGUF names, q/k rows interleaved per head, the llama3 RoPE scaling as
//! `rope_freqs.weight`, bf16 matrices). Loaded through the GGUF path it must be the same model:
//! same config, and logprobs over a 150-token sequence equal to the safetensors model's within
//! 1e-5 on cpu and on every wgpu adapter (the only difference is the rope factors' f32 rounding).
//! The q8_0 file goes through the quantized kernels and must give the CPU reference's logprobs.
use std::path::{Path, PathBuf};
use wgllm::backend::{cpu::CpuBackend, wgpu::WgpuBackend, Backend};
use wgllm::engine::sampler::log_softmax;
use wgllm::engine::Engine;
use wgllm::model::Logits;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn devices() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(CpuBackend::new())];
    v.extend(WgpuBackend::all().into_iter().map(|b| Box::new(b) as Box<dyn Backend>));
    v
}

fn logprobs(path: &Path, dev: Box<dyn Backend>, ids: &[u32]) -> (wgllm::model::config::Config, Vec<Vec<f64>>) {
    let mut e = Engine::load(path, dev, 512, &mut |_, _| {}).unwrap_or_else(|er| panic!("{}: {er}", path.display()));
    let mut cache = e.new_cache().unwrap();
    e.forward(&mut cache, ids, Logits::All, &mut |_, _, _| Ok(())).unwrap();
    let logits = e.logits(ids.len(), ids.len()).unwrap();
    let v = e.cfg.vocab_size;
    (
        e.cfg.clone(),
        (0..ids.len())
            .map(|p| log_softmax(&logits[p * v..(p + 1) * v]))
            .collect(),
    )
}

fn ids() -> Vec<u32> {
    (0..150u32).map(|i| (i * 2654435761u32 >> 7) % 509).collect()
}

fn max_diff(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0, f64::max)
}

#[test]
fn llama_gguf_is_the_safetensors_model() {
    let st = root().join("goldens/llama-tiny/model");
    let gg = root().join("tests/fixtures/llama-tiny-bf16.gguf");
    let ids = ids();
    let mut compared = 0;
    for (dev_st, dev_gg) in devices().into_iter().zip(devices()) {
        let name = dev_st.name();
        let (cs, a) = logprobs(&st, dev_st, &ids);
        let (cg, b) = logprobs(&gg, dev_gg, &ids);
        assert_eq!(
            (
                cs.hidden_size,
                cs.num_hidden_layers,
                cs.num_attention_heads,
                cs.num_key_value_heads,
                cs.head_dim,
                cs.vocab_size
            ),
            (
                cg.hidden_size,
                cg.num_hidden_layers,
                cg.num_attention_heads,
                cg.num_key_value_heads,
                cg.head_dim,
                cg.vocab_size
            )
        );
        assert_eq!(
            (cs.rms_norm_eps, cs.rope_theta, cs.tie_word_embeddings, cs.qk_norm),
            (cg.rms_norm_eps, cg.rope_theta, cg.tie_word_embeddings, cg.qk_norm)
        );
        let d = max_diff(&a, &b);
        println!("{name}: GGUF vs safetensors, 150 x 512 logprobs, max |diff| {d:.2e}");
        assert!(
            d <= 1e-5,
            "{name}: the GGUF Llama differs from the safetensors one by {d:.3e} (> 1e-5)"
        );
        compared += 1;
    }
    assert!(compared >= 1);
}

#[test]
fn llama_gguf_q8_0_same_on_every_device() {
    // the quantized model (q8_0 blocks on the device, dequantized in the kernels) on each wgpu
    // adapter against the CPU reference, which dequantizes exactly
    let q8 = root().join("tests/fixtures/llama-tiny-q8_0.gguf");
    let ids = ids();
    let (_, want) = logprobs(&q8, Box::new(CpuBackend::new()), &ids);
    let mut compared = 0;
    for dev in WgpuBackend::all() {
        let name = dev.name();
        let (c, got) = logprobs(&q8, Box::new(dev), &ids);
        assert_eq!(c.hidden_size, 128);
        let d = max_diff(&want, &got);
        println!("{name}: q8_0 model vs cpu, max |dlogprob| {d:.2e}");
        assert!(
            d <= 1e-4,
            "{name}: q8_0 Llama differs from the CPU reference by {d:.3e} (> 1e-4)"
        );
        compared += 1;
    }
    if compared == 0 {
        assert!(
            std::env::var("WGLLM_REQUIRE_GPU").map_or(true, |v| v != "1"),
            "no wgpu adapter and WGLLM_REQUIRE_GPU=1"
        );
        println!("no wgpu adapter: the q8_0 cross-device check compared nothing (skipped)");
    }
}
