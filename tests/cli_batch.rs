//! `wgllm batch` as a user runs it: a JSONL file of mixed requests (text, chat messages, token ids;
//! stop strings, logprobs, sampling) through the serving engine at once; one result a line in input
//! order; greedy results equal to `wgllm run --json` for the same prompt; a bad line refused before
//! loading with its line number.
use std::path::{Path, PathBuf};
use std::process::Command;

fn wgllm(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_wgllm"))
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tiny() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("goldens/qwen3-tiny/model")
        .display()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wgllm-cli-batch-{}-{name}", std::process::id()))
}

#[test]
fn mixed_requests_in_input_order_equal_to_run() {
    let input = tmp("in.jsonl");
    let output = tmp("out.jsonl");
    let lines = [
        r#"{"id": "a", "prompt": "The quick brown fox", "max_tokens": 12}"#,
        r#"{"messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 8, "logprobs": 3}"#,
        r#"{"prompt_ids": [1, 2, 3, 4, 5], "max_tokens": 6}"#,
        r#"{"prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0.8, "seed": 7}"#,
        r#"{"prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0.8, "seed": 7}"#,
        r#"{"prompt": "Once upon a time", "max_tokens": 20, "stop": ["e"]}"#,
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let model = tiny();
    let (ok, _, err) = wgllm(&[
        "batch",
        "--model",
        &model,
        "--device",
        "cpu",
        "--input",
        input.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
        "--max-batch-tokens",
        "16",
        "--max-seqs",
        "4",
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("generated tokens/s"), "no aggregate line: {err}");
    let out: Vec<serde_json::Value> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(out.len(), lines.len());
    assert_eq!(out[0]["id"], "a");
    assert_eq!(out[1]["id"], 1);
    let ids = |i: usize| -> Vec<u64> {
        out[i]["generated_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    assert!(!ids(0).is_empty() && ids(0).len() <= 12);
    let fr = out[0]["finish_reason"].as_str().unwrap();
    assert!(
        fr == "length" && ids(0).len() == 12 || fr == "eos",
        "{fr} after {} tokens",
        ids(0).len()
    );
    // logprobs: one per generated token, 3 alternatives each
    assert_eq!(out[1]["logprobs"].as_array().unwrap().len(), ids(1).len());
    assert!(out[1]["logprobs"][0].is_f64());
    assert_eq!(out[1]["top_logprobs"][0].as_array().unwrap().len(), 3);
    assert!(!ids(2).is_empty() && ids(2).len() <= 6);
    // the same seed gives the same tokens, whatever else is in the batch
    assert_eq!(ids(3), ids(4));
    // a stop string cuts the text and finishes with "stop"
    let t5 = out[5]["text"].as_str().unwrap();
    assert!(!t5.contains('e'), "stop string left in: {t5:?}");
    if out[5]["finish_reason"] == "stop" {
        assert!(ids(5).len() < 20);
    }
    // greedy batch output == `wgllm run --json` for the same prompt
    let (ok, stdout, err) = wgllm(&[
        "run",
        "--model",
        &model,
        "--device",
        "cpu",
        "--prompt",
        "The quick brown fox",
        "-n",
        "12",
        "--json",
    ]);
    assert!(ok, "{err}");
    let run: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let run_ids: Vec<u64> = run["generated_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(ids(0), run_ids, "batch and run disagree on a greedy prompt");
}

#[test]
fn bad_lines_are_refused_with_their_number_before_loading() {
    let model = tiny();
    for (body, want) in [
        ("{\"prompt\": \"hi\"}\n{\"prompt\": 3}\n", ":2: not a request"),
        (
            "{\"prompt\": \"hi\", \"prompt_ids\": [1]}\n",
            "give exactly one of prompt, messages, prompt_ids",
        ),
        (
            "{\"prompt\": \"hi\", \"temperature\": -1}\n",
            "--temperature must be a number >= 0",
        ),
        (
            "{\"prompt\": \"hi\", \"frobnicate\": 1}\n",
            "unknown field `frobnicate`",
        ),
        ("\n", "no request in it"),
    ] {
        let input = tmp("bad.jsonl");
        std::fs::write(&input, body).unwrap();
        let (ok, _, err) = wgllm(&[
            "batch",
            "--model",
            &model,
            "--device",
            "cpu",
            "--input",
            input.to_str().unwrap(),
            "--output",
            tmp("bad-out.jsonl").to_str().unwrap(),
        ]);
        assert!(!ok, "{body:?} accepted");
        assert!(err.contains(want), "{body:?}: {err}");
        assert!(!err.contains("loading weights"), "{body:?} refused after loading");
    }
}
