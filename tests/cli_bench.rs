//! `wgllm bench` through the built binary on the tiny model (cpu): decode is timed as llama-bench
//! times its tg test, so the figures beside llama.cpp's compare like with like: untimed runs for at
//! least a second, then three timed runs whose mean is the figure (the last three once they agree,
//! the unsteady ones before them counted), each run in the JSON; each prefill length likewise,
//! after one untimed run.
use std::path::Path;
use std::process::Command;

/// `wgllm bench` on the tiny model on the cpu with `args` after it: its JSON and its stdout.
fn bench(tag: &str, args: &[&str]) -> (serde_json::Value, String) {
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("goldens/qwen3-tiny/model");
    let json = std::env::temp_dir().join(format!("wgllm-bench-{tag}-{}.json", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_wgllm"))
        .args(["bench", "--model"])
        .arg(&model)
        .args(["--device", "cpu"])
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "bench failed:\n{stdout}{stderr}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    (v, stdout.into_owned())
}

/// `d`'s figure is the mean of its three timed runs, each finite and positive.
fn mean_of_three_runs(d: &serde_json::Value) {
    let runs: Vec<f64> = d["tokens_per_s_runs"]
        .as_array()
        .expect("tokens_per_s_runs")
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    assert_eq!(runs.len(), 3, "{d}");
    assert!(runs.iter().all(|r| r.is_finite() && *r > 0.0), "{d}");
    let mean = runs.iter().sum::<f64>() / 3.0;
    let figure = d["tokens_per_s"].as_f64().unwrap();
    assert!(
        (figure - mean).abs() <= 1e-9 * mean,
        "figure {figure} is not the runs' mean {mean}"
    );
}

#[test]
fn decode_is_the_mean_of_three_runs_after_a_warm_up() {
    let (v, stdout) = bench("decode", &["--decode", "4", "--prefill", "8"]);
    let d = &v["decode"];
    mean_of_three_runs(d);
    assert!(d["warm_up_s"].as_f64().unwrap() >= 1.0, "{d}");
    assert!(d["unsteady_runs"].as_u64().is_some_and(|n| n <= 12), "{d}");
    assert!(stdout.contains("3 runs after"), "{stdout}");
    mean_of_three_runs(&v["prefill"][0]);
    assert_eq!(v["prefill"][0]["tokens"], 8, "{}", v["prefill"]);
    assert_eq!(v["prefill"][0]["kv_len"], 8, "{}", v["prefill"]);
}

/// `--depth`: each timed prefill runs after that many tokens already in the cache (llama-bench's
/// -d), as the cache's own length after it says.
#[test]
fn prefill_at_depth_runs_after_the_cached_tokens() {
    let (v, stdout) = bench("depth", &["--decode", "2", "--prefill", "8,5", "--depth", "16"]);
    let p = &v["prefill"];
    assert_eq!(p.as_array().map(|a| a.len()), Some(2), "{p}");
    for (i, t) in [(0, 8), (1, 5)] {
        assert_eq!(p[i]["tokens"], t, "{p}");
        assert_eq!(p[i]["depth"], 16, "{p}");
        assert_eq!(p[i]["kv_len"], 16 + t, "{p}");
        mean_of_three_runs(&p[i]);
    }
    assert!(stdout.contains("prefill 8 at depth 16: "), "{stdout}");
}
