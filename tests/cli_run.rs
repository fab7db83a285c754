//! `wgllm run` as a user meets it, through the built binary: every bad flag refused before any
//! weights load with a message naming the flag and its allowed range; what `--model` must name;
//! `-n` past the context; `--json`'s finish_reason and stop-cut text; and streamed text equal to
//! `--json`'s text for a Chinese prompt on the real SmolLM2 GGUF (skipped with the reason when the
//! file is absent unless `WGLLM_REQUIRE_MODELS=1`).
mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn wgllm(args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_wgllm"))
        .arg("run")
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    Out {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn tiny() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("goldens/qwen3-tiny/model")
        .display()
        .to_string()
}

/// Runs with `args` on the tiny model and checks the run is refused, before loading, with a
/// message holding every one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    let model = tiny();
    let mut all = vec!["--model", model.as_str(), "--device", "cpu"];
    all.extend_from_slice(args);
    let o = wgllm(&all);
    assert!(!o.ok, "{args:?} was accepted:\n{}{}", o.stdout, o.stderr);
    for w in want {
        assert!(o.stderr.contains(w), "{args:?}: message lacks {w:?}:\n{}", o.stderr);
    }
    assert!(
        !o.stderr.contains("loading weights"),
        "{args:?}: refused only after loading:\n{}",
        o.stderr
    );
    assert!(
        !o.stderr.contains("unexpected argument"),
        "{args:?}: not our check:\n{}",
        o.stderr
    );
}

#[test]
fn temperature_below_zero_is_refused_by_our_check() {
    for args in [
        &["--temperature", "-1"][..],
        &["--temperature=-1"],
        &["--temperature", "-0.5"],
    ] {
        let mut a = args.to_vec();
        a.extend(["--prompt", "hi"]);
        refused(&a, &["--temperature", ">= 0"]);
    }
    refused(&["--temperature", "NaN", "--prompt", "hi"], &["--temperature", ">= 0"]);
}

#[test]
fn top_p_outside_zero_one_is_refused() {
    for v in ["2", "0", "-0.1", "1.0001"] {
        refused(&["--top-p", v, "--prompt", "hi"], &["--top-p", "0 < top-p <= 1"]);
    }
}

#[test]
fn top_k_below_zero_is_refused() {
    refused(&["--top-k", "-1", "--prompt", "hi"], &["--top-k", ">= 0"]);
    refused(&["--top-k", "many", "--prompt", "hi"], &["--top-k", ">= 0"]);
}

#[test]
fn ctx_below_one_is_refused() {
    refused(&["--ctx", "0", "--prompt", "hi"], &["--ctx", ">= 1"]);
    refused(&["--ctx", "-4", "--prompt", "hi"], &["--ctx", ">= 1"]);
}

#[test]
fn max_tokens_below_one_is_refused() {
    refused(&["-n", "0", "--prompt", "hi"], &["-n/--max-tokens", ">= 1"]);
    refused(&["-n", "-3", "--prompt", "hi"], &["-n/--max-tokens", ">= 1"]);
}

#[test]
fn seed_and_logprobs_below_zero_are_refused() {
    refused(&["--seed", "-1", "--prompt", "hi"], &["--seed", "0.."]);
    refused(
        &["--logprobs", "-1", "--json", "--prompt", "hi"],
        &["--logprobs", ">= 0"],
    );
}

#[test]
fn repetition_penalty_not_above_zero_is_refused() {
    for v in ["0", "-1", "-0.5", "NaN", "inf"] {
        refused(
            &["--repetition-penalty", v, "--prompt", "hi"],
            &["--repetition-penalty", "> 0 (1 = off)"],
        );
    }
    refused(
        &["--repetition-penalty=-2", "--prompt", "hi"],
        &["--repetition-penalty", "> 0"],
    );
}

#[test]
fn presence_and_frequency_penalties_outside_minus_two_two_are_refused() {
    for flag in ["--presence-penalty", "--frequency-penalty"] {
        for v in ["2.5", "-2.01", "-3", "x"] {
            refused(&[flag, v, "--prompt", "hi"], &[flag, "in [-2, 2]"]);
        }
        let eq = format!("{flag}=-7");
        refused(&[eq.as_str(), "--prompt", "hi"], &[flag, "in [-2, 2]"]);
    }
}

#[test]
fn min_p_outside_zero_one_is_refused() {
    for v in ["-0.1", "1.5", "-1", "two"] {
        refused(&["--min-p", v, "--prompt", "hi"], &["--min-p", "0 <= min-p <= 1"]);
    }
}

/// Values at the ends of the ranges, negative ones among them, are taken as values and run.
#[test]
fn penalties_and_min_p_in_range_run() {
    let m = tiny();
    let args = [
        "--model",
        &m,
        "--device",
        "cpu",
        "--tokens",
        "1,2,3",
        "-n",
        "6",
        "--ignore-eos",
        "--json",
        "--repetition-penalty",
        "0.5",
        "--presence-penalty",
        "-2",
        "--frequency-penalty=2",
        "--min-p",
        "1",
        "--temperature",
        "0.9",
    ];
    let (v, _) = json(&args);
    assert_eq!(v["generated_ids"].as_array().unwrap().len(), 6, "{v}");
}

#[test]
fn logprobs_without_json_is_refused() {
    refused(&["--logprobs", "3", "--prompt", "hi"], &["--logprobs needs --json"]);
}

#[test]
fn empty_stop_and_empty_tokens_are_refused() {
    refused(&["--stop=", "--prompt", "hi"], &["--stop must not be empty"]);
    refused(&["--tokens", ","], &["--tokens", "no token ids"]);
    refused(&["--tokens", "1,x"], &["--tokens", "`x` is not a token id"]);
}

#[test]
fn missing_prompt_is_reported_before_loading() {
    refused(&[], &["no prompt", "--prompt", "--chat", "--tokens"]);
}

fn temp_dir(tag: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("wgllm-cli-run-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn model_refused(model: &str, want: &[&str]) {
    let o = wgllm(&["--model", model, "--device", "cpu", "--prompt", "hi"]);
    assert!(!o.ok, "{model} was accepted");
    for w in want {
        assert!(
            o.stderr.contains(w),
            "--model {model}: message lacks {w:?}:\n{}",
            o.stderr
        );
    }
    assert!(!o.stderr.contains("loading weights"), "{}", o.stderr);
}

#[test]
fn model_paths_that_hold_no_model_say_what_a_model_directory_holds() {
    let holds = ["config.json", "tokenizer.json", ".gguf"];
    let gone = std::env::temp_dir().join("wgllm-cli-run-no-such-dir");
    let mut want = vec!["--model", "no such file or directory"];
    want.extend(holds);
    model_refused(&gone.display().to_string(), &want);

    let empty = temp_dir("empty");
    let mut want = vec!["neither config.json nor a .gguf"];
    want.extend(holds);
    model_refused(&empty.display().to_string(), &want);

    let two = temp_dir("two");
    std::fs::write(two.join("a.gguf"), b"").unwrap();
    std::fs::write(two.join("b.gguf"), b"").unwrap();
    model_refused(&two.display().to_string(), &["2 .gguf files", "a.gguf, b.gguf"]);

    let no_tok = temp_dir("no-tokenizer");
    std::fs::copy(Path::new(&tiny()).join("config.json"), no_tok.join("config.json")).unwrap();
    model_refused(&no_tok.display().to_string(), &["no tokenizer.json", "--tokens"]);
    for d in [empty, two, no_tok] {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn json(args: &[&str]) -> (serde_json::Value, String) {
    let o = wgllm(args);
    assert!(o.ok, "{args:?} failed:\n{}", o.stderr);
    (serde_json::from_str(o.stdout.trim()).unwrap(), o.stderr)
}

#[test]
fn max_tokens_past_the_context_generates_until_it_is_full() {
    let m = tiny();
    let args = [
        "--model", &m, "--device", "cpu", "--tokens", "1,2,3", "-n", "100000", "--ctx", "8",
    ];
    let (v, err) = json(&[&args[..], &["--json", "--ignore-eos"]].concat());
    assert_eq!(v["generated_ids"].as_array().unwrap().len(), 5, "{v}");
    assert_eq!(v["finish_reason"], "length");
    assert_eq!(v["context_full"], true);
    assert!(err.contains("does not fit") && err.contains("context holds 8"), "{err}");
    // streamed: the summary line says so too
    let o = wgllm(&[&args[..], &["--ignore-eos"]].concat());
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stderr.contains("finish: length (the context is full)"),
        "{}",
        o.stderr
    );
    // a prompt that fills the context is refused with what to change
    let o = wgllm(&["--model", &m, "--device", "cpu", "--tokens", "1,2,3", "--ctx", "3"]);
    assert!(!o.ok && o.stderr.contains("raise --ctx"), "{}", o.stderr);
}

#[test]
fn json_text_is_cut_at_the_stop_string_with_finish_reason() {
    let m = tiny();
    let base = [
        "--model",
        &m,
        "--device",
        "cpu",
        "--prompt",
        "hello",
        "-n",
        "24",
        "--ignore-eos",
        "--json",
    ];
    let (v, _) = json(&base);
    assert_eq!(v["finish_reason"], "length");
    let text = v["text"].as_str().unwrap().to_string();
    let chars: Vec<char> = text.chars().collect();
    assert!(chars.len() > 8, "{text:?}");
    // a stop string that first appears after the start of the text
    let (k, stop) = (chars.len() / 2..chars.len() - 1)
        .map(|k| (k, chars[k..k + 2].iter().collect::<String>()))
        .find(|(_, s)| !s.trim().is_empty() && text.find(s.as_str()).unwrap() > 0)
        .unwrap();
    let cut = &text[..text.find(&stop).unwrap()];
    assert!(cut.chars().count() <= k);
    let (v, _) = json(&[&base[..], &["--stop", &stop]].concat());
    assert_eq!(v["finish_reason"], "stop");
    assert_eq!(v["text"], cut, "stop {stop:?} in {text:?}");
    // streamed text stops at the same place
    let o = wgllm(&[&base[..base.len() - 1], &["--stop", &stop]].concat());
    assert_eq!(o.stdout, format!("{cut}\n"));
}

#[test]
fn smollm2_chinese_prompt_streams_the_same_text_as_json() {
    let Some(p) = common::smollm2_path() else {
        return;
    };
    let m = p.display().to_string();
    let args = [
        "--model",
        &m,
        "--prompt",
        "今天天气很好，我们去公园散步吧。",
        "-n",
        "24",
        "--device",
        "cpu",
    ];
    let streamed = wgllm(&args);
    assert!(streamed.ok, "{}", streamed.stderr);
    let (v, _) = json(&[&args[..], &["--json"]].concat());
    let text = v["text"].as_str().unwrap();
    assert!(text.chars().any(|c| c as u32 >= 0x4E00), "expected CJK in {text:?}");
    assert_eq!(streamed.stdout, format!("{text}\n"));
}

/// A kernel the adapter's compiler refuses (here: a shader directory whose rms_norm.wgsl does not
/// parse) ends the run with an error that names the kernel and the device and says what to try.
#[test]
fn a_kernel_the_adapter_refuses_is_named_with_what_to_try() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let dir = temp_dir("broken-shaders");
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.join("rms_norm.wgsl"), "fn broken( {\n").unwrap();
    let m = tiny();
    let o = Command::new(env!("CARGO_BIN_EXE_wgllm"))
        .args(["run", "--model", &m, "--device", "wgpu", "--tokens", "1,2,3", "-n", "2"])
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env("WGLLM_SHADER_DIR", &dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("no such device") || err.contains("no wgpu") {
        eprintln!("skipped: no wgpu adapter here ({err})");
        return;
    }
    assert!(!o.status.success(), "ran with a broken kernel: {err}");
    for want in ["compile kernel rms_norm", "--device cpu", "WGLLM_SHADER_CHECKS=1"] {
        assert!(err.contains(want), "{want:?} missing from: {err}");
    }
}
