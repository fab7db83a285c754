//! `wgllm serve` over HTTP: the built binary started on a free loopback port, talked to with a
//! small HTTP client (tests/server/http.rs). Tiny model (embedded, random weights): response shapes,
//! streaming, seeds, logprobs, n, stop strings, every refusal with its status and the field it
//! names, a disconnect freeing its KV blocks, the bounded queue, graceful shutdown, the load test.
//! SmolLM2 GGUF: a greedy chat equals `wgllm run --chat`.
#[allow(dead_code)]
mod common;
#[path = "server/http.rs"]
mod http;
#[path = "server/load.rs"]
mod load;
#[path = "server/proc.rs"]
mod proc;

use http::{get, post};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use proc::{Server, KEY};
use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::Duration;

const TINY: &str = "wgllm-tiny";
const CTX: usize = 256;
const BODY_LIMIT: usize = 65536;

type R = Result<(), String>;

macro_rules! ensure {
    ($c:expr, $($f:tt)*) => { if !$c { return Err(format!($($f)*)); } };
}

static TINY_SERVER: OnceLock<Server> = OnceLock::new();

fn tiny() -> &'static Server {
    TINY_SERVER.get_or_init(|| {
        let (ctx, lim) = (CTX.to_string(), BODY_LIMIT.to_string());
        let s = Server::start(&["--api-key", KEY, "--ctx", &ctx, "--max-body-bytes", &lim]);
        // the process is killed when the test binary exits (see main)
        s
    })
}

fn cmpl(extra: Value) -> Value {
    let mut b = json!({"model": TINY, "prompt": [1, 2, 3, 4, 5], "max_tokens": 8, "temperature": 0});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

fn chat_body(extra: Value) -> Value {
    let mut b = json!({"model": TINY, "messages": [{"role": "user", "content": "Hello there"}], "max_tokens": 8,
                       "temperature": 0});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

fn ok(r: &http::Resp) -> Result<Value, String> {
    ensure!(r.status == 200, "status {}: {}", r.status, r.body);
    Ok(r.json())
}

fn shapes() -> R {
    let s = tiny();
    let m = ok(&get(&s.addr, "/v1/models", Some(KEY)))?;
    let metrics = get(&s.addr, "/metrics", None);
    ensure!(
        metrics.status == 200
            && metrics
                .header("content-type")
                .is_some_and(|t| t.starts_with("text/plain")),
        "/metrics"
    );
    for name in [
        "wgllm_kv_blocks_used",
        "wgllm_prefix_cache_hit_rate",
        "wgllm_preemptions_total",
        "wgllm_time_to_first_token_seconds_bucket",
        "wgllm_inter_token_latency_seconds_bucket",
    ] {
        ensure!(metrics.body.contains(name), "/metrics lacks {name}");
    }
    ensure!(m["object"] == "list" && m["data"][0]["id"] == TINY, "models: {m}");
    let c = ok(&post(&s.addr, "/v1/completions", Some(KEY), &cmpl(json!({}))))?;
    ensure!(
        c["object"] == "text_completion" && c["id"].as_str().unwrap().starts_with("cmpl-"),
        "{c}"
    );
    ensure!(
        c["created"].as_u64().unwrap() > 1_600_000_000 && c["model"] == TINY,
        "{c}"
    );
    let u = &c["usage"];
    let ch = &c["choices"][0];
    ensure!(u["prompt_tokens"] == 5, "usage {u}");
    let n = u["completion_tokens"].as_u64().unwrap();
    ensure!(u["total_tokens"].as_u64() == Some(5 + n), "usage {u}");
    let f = ch["finish_reason"].as_str().unwrap();
    ensure!(
        (f == "length" && n == 8) || (f == "stop" && n <= 8),
        "finish {f} after {n} tokens"
    );
    let c = ok(&post(&s.addr, "/v1/chat/completions", Some(KEY), &chat_body(json!({}))))?;
    ensure!(
        c["object"] == "chat.completion" && c["id"].as_str().unwrap().starts_with("chatcmpl-"),
        "{c}"
    );
    ensure!(c["choices"][0]["message"]["role"] == "assistant", "{c}");
    ensure!(c["choices"][0]["message"]["content"].is_string(), "{c}");
    Ok(())
}

/// Streams `body` to the end: (chunks, saw [DONE]).
fn stream_all(path: &str, body: &Value) -> Result<(Vec<Value>, bool), String> {
    let mut ev = http::stream(&tiny().addr, path, Some(KEY), body).map_err(|e| e.to_string())?;
    ensure!(ev.status == 200, "status {}", ev.status);
    let mut v = vec![];
    while let Some(d) = ev.next_data() {
        if d == "[DONE]" {
            return Ok((v, true));
        }
        v.push(serde_json::from_str(&d).map_err(|e| format!("{d}: {e}"))?);
    }
    Ok((v, false))
}

fn streaming() -> R {
    let s = tiny();
    for (path, field) in [("/v1/completions", "text"), ("/v1/chat/completions", "content")] {
        let body = if field == "text" {
            cmpl(json!({"max_tokens": 16}))
        } else {
            chat_body(json!({"max_tokens": 16}))
        };
        let whole = ok(&post(&s.addr, path, Some(KEY), &body))?;
        let mut sb = body.clone();
        sb["stream"] = json!(true);
        sb["stream_options"] = json!({"include_usage": true});
        let (chunks, done) = stream_all(path, &sb)?;
        ensure!(done, "{path}: no [DONE]");
        let (mut text, mut finish) = (String::new(), None);
        for c in &chunks[..chunks.len() - 1] {
            ensure!(c["usage"].is_null(), "{path}: usage on a token chunk {c}");
            let ch = &c["choices"][0];
            let piece = if field == "text" {
                &ch["text"]
            } else {
                &ch["delta"]["content"]
            };
            text.push_str(piece.as_str().unwrap_or(""));
            if let Some(f) = ch["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
        if field == "content" {
            ensure!(
                chunks[0]["choices"][0]["delta"]["role"] == "assistant",
                "first chunk {}",
                chunks[0]
            );
            ensure!(chunks[0]["object"] == "chat.completion.chunk", "{}", chunks[0]);
        }
        let last = chunks.last().unwrap();
        ensure!(
            last["choices"].as_array().is_some_and(|c| c.is_empty()),
            "{path}: usage chunk {last}"
        );
        ensure!(
            last["usage"] == whole["usage"],
            "{path}: streamed usage {} vs {}",
            last["usage"],
            whole["usage"]
        );
        let wc = &whole["choices"][0];
        let wt = if field == "text" {
            &wc["text"]
        } else {
            &wc["message"]["content"]
        };
        ensure!(
            wt.as_str() == Some(text.as_str()),
            "{path}: streamed {text:?} vs whole {wt}"
        );
        ensure!(
            finish.as_deref() == wc["finish_reason"].as_str(),
            "{path}: finish {finish:?} vs {wc}"
        );
    }
    Ok(())
}

fn text_of(v: &Value, i: usize) -> String {
    v["choices"][i]["text"].as_str().unwrap().to_string()
}

fn seeds_n_logprobs() -> R {
    let s = tiny();
    let sampled = |seed: u64| {
        ok(&post(
            &s.addr,
            "/v1/completions",
            Some(KEY),
            &cmpl(json!({"temperature": 1.0, "seed": seed, "max_tokens": 16})),
        ))
    };
    let (a, b, c) = (sampled(7)?, sampled(7)?, sampled(8)?);
    ensure!(
        text_of(&a, 0) == text_of(&b, 0),
        "seed 7 twice: {:?} vs {:?}",
        text_of(&a, 0),
        text_of(&b, 0)
    );
    ensure!(
        text_of(&a, 0) != text_of(&c, 0),
        "seeds 7 and 8 gave the same text {:?}",
        text_of(&a, 0)
    );
    let n = ok(&post(
        &s.addr,
        "/v1/completions",
        Some(KEY),
        &cmpl(json!({"temperature": 1.0, "seed": 7, "n": 2, "max_tokens": 16})),
    ))?;
    ensure!(
        n["choices"].as_array().unwrap().len() == 2 && n["choices"][1]["index"] == 1,
        "n=2: {n}"
    );
    ensure!(text_of(&n, 0) == text_of(&a, 0), "choice 0 of n=2 is seed 7's text");
    let lp = ok(&post(
        &s.addr,
        "/v1/completions",
        Some(KEY),
        &cmpl(json!({"logprobs": 3})),
    ))?;
    let l = &lp["choices"][0]["logprobs"];
    let k = lp["usage"]["completion_tokens"].as_u64().unwrap() as usize;
    ensure!(
        l["tokens"].as_array().unwrap().len() == k && l["token_logprobs"].as_array().unwrap().len() == k,
        "{l}"
    );
    ensure!(l["top_logprobs"][0].as_object().unwrap().len() <= 3, "{l}");
    ensure!(
        l["token_logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x.as_f64().unwrap() <= 0.0),
        "{l}"
    );
    let cl = ok(&post(
        &s.addr,
        "/v1/chat/completions",
        Some(KEY),
        &chat_body(json!({"logprobs": true, "top_logprobs": 2})),
    ))?;
    let content = cl["choices"][0]["logprobs"]["content"].as_array().unwrap().clone();
    ensure!(
        content.len() as u64 == cl["usage"]["completion_tokens"].as_u64().unwrap(),
        "{cl}"
    );
    ensure!(
        content.iter().all(|t| t["top_logprobs"].as_array().unwrap().len() == 2),
        "{cl}"
    );
    // greedy: the chosen token is the most likely one
    ensure!(
        content
            .iter()
            .all(|t| t["logprob"].as_f64() >= t["top_logprobs"][0]["logprob"].as_f64().map(|x| x - 1e-6)),
        "{cl}"
    );
    Ok(())
}

fn stop_strings() -> R {
    let s = tiny();
    let full = ok(&post(
        &s.addr,
        "/v1/completions",
        Some(KEY),
        &cmpl(json!({"max_tokens": 24})),
    ))?;
    let t = text_of(&full, 0);
    let chars: Vec<(usize, char)> = t.char_indices().collect();
    ensure!(chars.len() >= 8, "too little text to cut: {t:?}");
    let (a, b) = (
        chars[chars.len() / 2].0,
        chars.get(chars.len() / 2 + 2).map_or(t.len(), |c| c.0),
    );
    let stop = &t[a..b];
    let want = &t[..t.find(stop).unwrap()];
    for stream in [false, true] {
        let body = cmpl(json!({"max_tokens": 24, "stop": [stop], "stream": stream}));
        let (got, fin) = if stream {
            let (chunks, _) = stream_all("/v1/completions", &body)?;
            let mut g = String::new();
            let mut f = None;
            for c in chunks {
                g.push_str(c["choices"][0]["text"].as_str().unwrap_or(""));
                f = f.or(c["choices"][0]["finish_reason"].as_str().map(String::from));
            }
            (g, f)
        } else {
            let r = ok(&post(&s.addr, "/v1/completions", Some(KEY), &body))?;
            (
                text_of(&r, 0),
                r["choices"][0]["finish_reason"].as_str().map(String::from),
            )
        };
        ensure!(
            got == want && fin.as_deref() == Some("stop"),
            "stop {stop:?} (stream {stream}): {got:?} {fin:?}, want {want:?}"
        );
    }
    Ok(())
}

/// (status, body) of a raw request to the tiny server.
fn expect_error(path: &str, key: Option<&str>, body: &[u8], status: u16, names: &[&str]) -> R {
    let r = http::request(&tiny().addr, "POST", path, key, body).map_err(|e| e.to_string())?;
    ensure!(
        r.status == status,
        "{path} {}: status {} (want {status}): {}",
        String::from_utf8_lossy(&body[..body.len().min(200)]),
        r.status,
        r.body
    );
    let e = r.json();
    let msg = e["error"]["message"]
        .as_str()
        .ok_or(format!("not an OpenAI error: {}", r.body))?;
    ensure!(e["error"]["type"].is_string(), "no type: {}", r.body);
    for n in names {
        ensure!(msg.contains(n), "message {msg:?} does not name {n:?}");
    }
    Ok(())
}

fn errors() -> R {
    let c = |v: Value| cmpl(v).to_string().into_bytes();
    let ch = |v: Value| chat_body(v).to_string().into_bytes();
    let (cp, hp) = ("/v1/completions", "/v1/chat/completions");
    expect_error(cp, Some(KEY), &c(json!({"temperature": 5})), 400, &["temperature"])?;
    expect_error(cp, Some(KEY), &c(json!({"top_p": 0})), 400, &["top_p"])?;
    expect_error(cp, Some(KEY), &c(json!({"max_tokens": 0})), 400, &["max_tokens"])?;
    expect_error(cp, Some(KEY), &c(json!({"n": 99})), 400, &["n"])?;
    expect_error(cp, Some(KEY), &c(json!({"stop": 3})), 400, &["stop"])?;
    expect_error(cp, Some(KEY), &c(json!({"frobnicate": 1})), 400, &["frobnicate"])?;
    expect_error(cp, Some(KEY), &c(json!({"echo": true})), 400, &["echo"])?;
    expect_error(
        cp,
        Some(KEY),
        &c(json!({"prompt": [99999999]})),
        400,
        &["prompt", "99999999"],
    )?;
    expect_error(cp, Some(KEY), &c(json!({"prompt": ["a", "b"]})), 400, &["prompt"])?;
    expect_error(
        hp,
        Some(KEY),
        &ch(json!({"presence_penalty": 1.0})),
        400,
        &["presence_penalty"],
    )?;
    expect_error(
        hp,
        Some(KEY),
        &ch(json!({"tools": [{"type": "function", "function": {"name": "f"}}]})),
        400,
        &["tools"],
    )?;
    expect_error(
        hp,
        Some(KEY),
        &ch(json!({"messages": [{"role": "user"}]})),
        400,
        &["messages[0].content"],
    )?;
    expect_error(hp, Some(KEY), &ch(json!({"top_logprobs": 2})), 400, &["top_logprobs"])?;
    expect_error(
        hp,
        Some(KEY),
        &ch(json!({"stream_options": {"include_usage": true}})),
        400,
        &["stream_options"],
    )?;
    expect_error(hp, Some(KEY), b"{not json", 400, &["JSON"])?;
    // 401: no key, wrong key
    expect_error(cp, None, &c(json!({})), 401, &["Authorization"])?;
    expect_error(cp, Some("sk-wrong"), &c(json!({})), 401, &["Authorization"])?;
    // 404: unknown model
    expect_error(hp, Some(KEY), &ch(json!({"model": "gpt-9"})), 404, &["model", "gpt-9"])?;
    // 400: prompt longer than the context, with both numbers; prompt + max_tokens over it
    let long: Vec<u32> = (0..CTX as u32 + 10).map(|i| 1 + i % 50).collect();
    expect_error(
        cp,
        Some(KEY),
        &c(json!({"prompt": long})),
        400,
        &["prompt", &CTX.to_string(), &(CTX + 10).to_string()],
    )?;
    expect_error(
        cp,
        Some(KEY),
        &c(json!({"max_tokens": CTX})),
        400,
        &["max_tokens", &CTX.to_string(), "5 tokens"],
    )?;
    // 413: a body over --max-body-bytes
    let big = c(json!({"user": "x".repeat(BODY_LIMIT * 2)}));
    expect_error(cp, Some(KEY), &big, 413, &["body", &BODY_LIMIT.to_string()])?;
    Ok(())
}

fn disconnect_frees_kv() -> R {
    let s = tiny();
    let before = s.metric("wgllm_requests_aborted_total");
    let mut ev = http::stream(
        &s.addr,
        "/v1/completions",
        Some(KEY),
        &cmpl(json!({"max_tokens": 200, "stream": true, "prompt": vec![7; 40]})),
    )
    .map_err(|e| e.to_string())?;
    for _ in 0..3 {
        ensure!(ev.next_data().is_some(), "stream ended early");
    }
    drop(ev);
    std::thread::sleep(Duration::from_millis(200));
    s.wait_kv_free(Duration::from_secs(30))?;
    let after = s.metric("wgllm_requests_aborted_total");
    ensure!(
        after > before,
        "the disconnected request was not aborted ({before} -> {after})"
    );
    Ok(())
}

fn queue_full() -> R {
    let s = Server::start(&["--max-seqs", "1", "--max-queue", "0", "--ctx", "512"]);
    let mut ev = http::stream(
        &s.addr,
        "/v1/completions",
        None,
        &json!({"model": TINY, "prompt": [1, 2], "max_tokens": 500, "stream": true}),
    )
    .map_err(|e| e.to_string())?;
    ensure!(ev.next_data().is_some(), "first request did not start");
    let r = post(
        &s.addr,
        "/v1/completions",
        None,
        &json!({"model": TINY, "prompt": [1, 2], "max_tokens": 4}),
    );
    ensure!(r.status == 429, "second request: {} {}", r.status, r.body);
    ensure!(
        r.json()["error"]["message"].as_str().unwrap().contains("queue"),
        "{}",
        r.body
    );
    drop(ev);
    s.wait_kv_free(Duration::from_secs(30))?;
    // room again once the first one is gone
    let r = post(
        &s.addr,
        "/v1/completions",
        None,
        &json!({"model": TINY, "prompt": [1, 2], "max_tokens": 4}),
    );
    ensure!(r.status == 200, "after the first: {} {}", r.status, r.body);
    Ok(())
}

fn shutdown() -> R {
    // the tiny model's context is 512: the longest request it can take
    let mut s = Server::start(&["--shutdown-grace", "0", "--ctx", "512"]);
    let body = json!({"model": TINY, "prompt": [1, 2], "max_tokens": 500, "stream": true});
    let mut ev = http::stream(&s.addr, "/v1/completions", None, &body).map_err(|e| e.to_string())?;
    ensure!(ev.status == 200, "status {}", ev.status);
    ensure!(ev.next_data().is_some(), "the request did not start");
    let st = s
        .terminate(Duration::from_secs(60))
        .ok_or("not stopped within 60 s after SIGTERM")?;
    ensure!(st.success(), "exit status {st:?}; stderr:\n{}", s.log.lock().unwrap());
    // the in-flight stream ends properly: an error event (aborted) then [DONE]
    let mut rest = vec![];
    while let Some(d) = ev.next_data() {
        rest.push(d);
    }
    ensure!(
        rest.last().map(String::as_str) == Some("[DONE]"),
        "stream tail {:?}",
        &rest[rest.len().saturating_sub(2)..]
    );
    ensure!(
        rest.iter().any(|d| d.contains("shutting down")),
        "no abort event in the tail"
    );
    ensure!(
        http::request(&s.addr, "GET", "/health", None, b"").is_err(),
        "still accepting after exit"
    );
    Ok(())
}

fn smollm2_chat_matches_run() -> Result<Completion, Failed> {
    let Some(gguf) = common::smollm2_path() else {
        return Ok(Completion::ignored_with("skipped: no SmolLM2 GGUF"));
    };
    let g = gguf.to_str().unwrap();
    let q = "What is the capital of France?";
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgllm"))
        .args([
            "run",
            "--model",
            g,
            "--chat",
            q,
            "-n",
            "24",
            "--json",
            "--device",
            &proc::device(),
        ])
        .output()
        .map_err(|e| e.to_string())?;
    let run: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&out.stderr)))?;
    let s = Server::start(&["--model", g]);
    let name = "SmolLM2-135M-Instruct.Q4_1";
    let r = post(
        &s.addr,
        "/v1/chat/completions",
        None,
        &json!({"model": name, "messages": [{"role": "user", "content": q}], "max_tokens": 24, "temperature": 0}),
    );
    let v = ok(&r)?;
    let got = v["choices"][0]["message"]["content"].as_str().unwrap_or("");
    if Some(got) != run["text"].as_str() {
        return Err(format!("server {got:?} vs run --chat {:?}", run["text"]).into());
    }
    println!("    greedy chat: {got:?} (both)");
    Ok(Completion::Completed)
}

fn trial(name: &str, f: fn() -> R) -> Trial {
    Trial::test(name, move || f().map_err(Failed::from))
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        trial("server::shapes", shapes),
        trial("server::streaming", streaming),
        trial("server::seeds_n_logprobs", seeds_n_logprobs),
        trial("server::stop_strings", stop_strings),
        trial("server::errors", errors),
        trial("server::disconnect_frees_kv", disconnect_frees_kv),
        trial("server::queue_full", queue_full),
        trial("server::shutdown", shutdown),
        Trial::ignorable_test("server::smollm2_chat_matches_run", smollm2_chat_matches_run),
        Trial::test("server::load", || {
            load::run(&[], TINY).map(|_| ()).map_err(Failed::from)
        }),
    ];
    let c = libtest_mimic::run(&args, trials);
    // a static is never dropped: stop the shared server by hand
    if let Some(s) = TINY_SERVER.get() {
        s.kill_now();
    }
    c.exit_code()
}
