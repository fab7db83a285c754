//! `wgllm chat` driven through a pipe, as a script would: the history is carried (the second
//! answer's prompt holds the first exchange), /reset forgets it, --system is in every prompt, and
//! bad flags are refused before loading. The tiny model always; the real SmolLM2 GGUF and its
//! template when present (skipped with the reason otherwise, unless `WGLLM_REQUIRE_MODELS=1`).
mod common;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

struct Out {
    ok: bool,
    turns: Vec<serde_json::Value>,
    stderr: String,
}

fn chat(args: &[&str], stdin: &str) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wgllm"))
        .arg("chat")
        .args(args)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Err(e) = c.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        // a run refused before it reads its input (bad flags) may have exited already
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "writing the chat's stdin: {e}"
        );
    }
    let o = c.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let turns = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    Out {
        ok: o.status.success(),
        turns,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn ids(v: &serde_json::Value, field: &str) -> Vec<u32> {
    v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn tiny() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("goldens/qwen3-tiny/model")
        .display()
        .to_string()
}

/// Two messages, a /reset, the first message again: turn 2's prompt starts with turn 1's prompt
/// and goes on with turn 1's answer; turn 3's prompt is turn 1's again.
fn carries_history(model: &str, system: &str) {
    let o = chat(
        &[
            "--model", model, "--device", "cpu", "-n", "12", "--json", "--system", system,
        ],
        "Name a color.\nAnd another one?\n/reset\nName a color.\n/exit\nnever read\n",
    );
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(o.turns.len(), 3, "one object per turn, /exit ends: {:?}", o.turns);
    let (p1, p2, p3) = (
        ids(&o.turns[0], "prompt_ids"),
        ids(&o.turns[1], "prompt_ids"),
        ids(&o.turns[2], "prompt_ids"),
    );
    assert!(
        p2.len() > p1.len() && p2[..p1.len()] == p1[..],
        "turn 2's prompt does not start with turn 1's"
    );
    let answer1 = o.turns[0]["text"].as_str().unwrap();
    let gen1 = ids(&o.turns[0], "generated_ids");
    assert!(!gen1.is_empty());
    // The answer follows the first prompt: its ids when the text re-tokenizes the same way, its text always.
    let rest = &p2[p1.len()..];
    let same_ids = rest.starts_with(&gen1[..gen1.len() - 1]);
    assert!(
        same_ids || !answer1.is_empty(),
        "turn 1's answer is not in turn 2's prompt"
    );
    assert_eq!(p3, p1, "/reset: the third prompt is the first one again");
}

#[test]
fn tiny_model_carries_history_and_resets() {
    carries_history(&tiny(), "You are terse.");
}

#[test]
fn smollm2_carries_history_through_its_template() {
    let Some(p) = common::smollm2_path() else { return };
    carries_history(&p.display().to_string(), "You are a helpful assistant.");
    // The system prompt is in the rendered prompt, once.
    let o = chat(
        &[
            "--model",
            &p.display().to_string(),
            "--device",
            "cpu",
            "-n",
            "4",
            "--json",
            "--system",
            "Answer in French.",
        ],
        "Hello\n",
    );
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(o.turns.len(), 1);
    let prompt = o.turns[0]["prompt"].as_str().unwrap();
    assert_eq!(prompt.matches("Answer in French.").count(), 1, "{prompt}");
    assert!(prompt.find("Answer in French.") < prompt.find("Hello"), "{prompt}");
}

#[test]
fn bad_flags_are_refused_before_loading() {
    let model = tiny();
    for (args, want) in [
        (vec!["--temperature", "-1"], "--temperature must be a number >= 0"),
        (vec!["--top-p", "2"], "--top-p must be a number in (0, 1]"),
        (vec!["-n", "0"], "-n/--max-tokens must be an integer >= 1"),
        (vec!["--ctx", "1"], "--ctx must be an integer >= 2"),
    ] {
        let mut all = vec!["--model", model.as_str(), "--device", "cpu"];
        all.extend_from_slice(&args);
        let o = chat(&all, "hi\n");
        assert!(!o.ok, "{args:?} accepted");
        assert!(o.stderr.contains(want), "{args:?}: {}", o.stderr);
        assert!(!o.stderr.contains("loading weights"), "{args:?} refused after loading");
    }
    let o = chat(&["--model", "/nonexistent/model"], "hi\n");
    assert!(!o.ok && o.stderr.contains("a model directory holds"), "{}", o.stderr);
}
