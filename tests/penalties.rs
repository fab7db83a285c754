//! Penalties and min-p through the whole engine: the same penalized greedy run gives the same
//! tokens on cpu and on every wgpu adapter; a repetition penalty breaks the greedy loops of the
//! embedded default model (and of the real SmolLM2 GGUF when present); min-p = 1 leaves only the
//! top token, so sampling at any temperature follows the greedy run; the library refuses bad values.
mod common;
use std::path::PathBuf;
use wgllm::backend::{cpu::CpuBackend, wgpu::WgpuBackend, Backend};
use wgllm::engine::sampler::{Sampler, Sampling};
use wgllm::engine::Engine;

fn tiny() -> PathBuf {
    wgllm::model::default::dir().unwrap()
}

fn devices() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(CpuBackend::new())];
    for w in WgpuBackend::all() {
        v.push(Box::new(w));
    }
    v
}

fn run(e: &mut Engine, prompt: &[u32], n: usize, s: Sampling) -> Vec<u32> {
    e.generate(prompt, n, &mut Sampler::new(s), None, false, &mut |_| true)
        .unwrap()
        .iter()
        .map(|s| s.token)
        .collect()
}

/// Tokens that repeat an earlier generated token.
fn repeats(t: &[u32]) -> usize {
    let mut seen = std::collections::HashSet::new();
    t.iter().filter(|&&x| !seen.insert(x)).count()
}

fn penalized() -> Sampling {
    Sampling {
        repetition_penalty: 1.3,
        presence_penalty: 0.4,
        frequency_penalty: 0.3,
        ..Default::default()
    }
}

const PROMPT: [u32; 6] = [1, 17, 300, 42, 7, 255];

#[test]
fn penalized_greedy_is_the_same_on_every_device() {
    let devs = devices();
    assert!(devs.len() > 1, "no wgpu adapter: nothing to compare the cpu run with");
    let mut want: Option<(Vec<u32>, Vec<u32>, String)> = None;
    for dev in devs {
        let name = dev.name();
        let mut e = Engine::load(&tiny(), dev, 256, &mut |_, _| {}).unwrap();
        let plain = run(&mut e, &PROMPT, 32, Sampling::default());
        let pen = run(&mut e, &PROMPT, 32, penalized());
        assert_ne!(pen, plain, "{name}: the penalties changed nothing");
        match &want {
            None => want = Some((plain, pen, name)),
            Some((p0, q0, n0)) => {
                // the unpenalized runs agreeing is the premise: the devices' logits are close
                assert_eq!(&plain, p0, "plain greedy differs between {n0} and {name}");
                assert_eq!(&pen, q0, "penalized greedy differs between {n0} and {name}");
            }
        }
    }
}

#[test]
fn repetition_penalty_breaks_the_default_models_loop() {
    let mut e = Engine::load(&tiny(), Box::new(CpuBackend::new()), 256, &mut |_, _| {}).unwrap();
    let plain = run(&mut e, &PROMPT, 48, Sampling::default());
    let pen = run(
        &mut e,
        &PROMPT,
        48,
        Sampling {
            repetition_penalty: 1.5,
            ..Default::default()
        },
    );
    let (a, b) = (repeats(&plain), repeats(&pen));
    eprintln!("default model, 48 greedy tokens: {a} repeats, {b} with the penalty");
    assert!(
        a >= 24,
        "the premise: the unpenalized greedy output loops ({a} repeats): {plain:?}"
    );
    assert!(b < a, "repeats {a} -> {b} with --repetition-penalty 1.5: {pen:?}");
}

#[test]
fn repetition_penalty_breaks_smollm2s_loop() {
    let Some(p) = common::smollm2_path() else {
        return;
    };
    let mut e = Engine::load(&p, Box::new(CpuBackend::new()), 512, &mut |_, _| {}).unwrap();
    let tok = e.tokenizer.take().unwrap();
    let prompt = tok.encode_prompt("one two three one two three one two three").unwrap();
    let plain = run(&mut e, &prompt, 40, Sampling::default());
    let pen = run(
        &mut e,
        &prompt,
        40,
        Sampling {
            repetition_penalty: 1.3,
            ..Default::default()
        },
    );
    let (a, b) = (repeats(&plain), repeats(&pen));
    eprintln!("SmolLM2, 40 greedy tokens: {a} repeats, {b} with the penalty");
    assert!(
        a >= 20,
        "the premise: SmolLM2's greedy output loops ({a} repeats): {plain:?}"
    );
    assert!(b < a, "repeats {a} -> {b} with --repetition-penalty 1.3: {pen:?}");
}

/// min_p = 1 keeps only the top token (and its ties), so sampling, whatever the temperature and
/// seed, gives the greedy tokens; with the penalties on too, the penalized greedy tokens.
#[test]
fn min_p_one_samples_the_greedy_tokens() {
    for dev in devices() {
        let name = dev.name();
        let mut e = Engine::load(&tiny(), dev, 256, &mut |_, _| {}).unwrap();
        for base in [Sampling::default(), penalized()] {
            let greedy = run(&mut e, &PROMPT, 24, base.clone());
            let hot = Sampling {
                temperature: 5.0,
                seed: 7,
                ..base.clone()
            };
            let wild = run(&mut e, &PROMPT, 24, hot.clone());
            assert_ne!(wild, greedy, "{name}: the premise, T = 5 sampling leaves greedy");
            let kept = run(&mut e, &PROMPT, 24, Sampling { min_p: 1.0, ..hot });
            assert_eq!(kept, greedy, "{name}: min_p = 1 sampling vs greedy");
        }
    }
}

#[test]
fn bad_values_are_refused_by_field() {
    let mut e = Engine::load(&tiny(), Box::new(CpuBackend::new()), 64, &mut |_, _| {}).unwrap();
    for (s, field) in [
        (
            Sampling {
                repetition_penalty: 0.0,
                ..Default::default()
            },
            "repetition_penalty",
        ),
        (
            Sampling {
                presence_penalty: -3.0,
                ..Default::default()
            },
            "presence_penalty",
        ),
        (
            Sampling {
                frequency_penalty: 2.5,
                ..Default::default()
            },
            "frequency_penalty",
        ),
        (
            Sampling {
                min_p: 1.5,
                ..Default::default()
            },
            "min_p",
        ),
    ] {
        let err = e
            .generate(&PROMPT, 2, &mut Sampler::new(s), None, false, &mut |_| true)
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{err}");
    }
    // choose keeps no history: it refuses rather than ignore the penalties
    e.generate(
        &PROMPT,
        1,
        &mut Sampler::new(Sampling::default()),
        None,
        false,
        &mut |_| true,
    )
    .unwrap();
    let err = e
        .choose(1, &mut Sampler::new(penalized()), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("penalties"), "{err}");
}
