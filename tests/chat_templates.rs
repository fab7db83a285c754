//! Real chat templates (tests/fixtures/chat_templates/, SOURCES.md there) rendered by
//! src/model/chat_template/:
//! - goldens/chat-templates (transformers' apply_chat_template, tools/oracle/chat_templates.py):
//!   every case byte-equal, for Qwen3, Qwen3.5, Llama 3.1/3.2/3.3, SmolLM2 and SmolLM3;
//! - the Qwen3 case again through `Tokenizer::from_dir` (tokenizer_config.json's template and
//!   special tokens);
//! - the whole collection on a standard conversation: byte-equal to what transformers rendered, or
//!   refused with the reason named where transformers refused too (known divergences listed with
//!   their reason); the counts are printed.
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use wgllm::error::Error;
use wgllm::model::chat_template::{ChatMessage, ChatOptions, ChatTemplate};
use wgllm::model::tokenizer::Tokenizer;
use wgllm::parity::golden;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/chat_templates")
}

/// A fixture's template source: a .jinja file as it is, or a tokenizer_config.json's `chat_template`.
fn template_source(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "json") {
        let v: Json = serde_json::from_str(&text).unwrap();
        v["chat_template"].as_str().unwrap().to_string()
    } else {
        text
    }
}

fn messages(v: &Json) -> Vec<ChatMessage> {
    serde_json::from_value(v.clone()).unwrap()
}

/// The options a golden case was rendered with: enable_thinking goes to its field, every other
/// kwarg to `extra`, the tools as the golden's tools.json text.
fn options(case: &Json, dir: &Path) -> ChatOptions {
    let mut o = ChatOptions {
        add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap(),
        ..ChatOptions::default()
    };
    for (k, v) in case["kwargs"].as_object().unwrap() {
        match k.as_str() {
            "enable_thinking" => o.enable_thinking = Some(v.as_bool().unwrap()),
            _ => o.extra.push((k.clone(), v.clone())),
        }
    }
    if let Some(f) = case["tools"].as_str() {
        o.tools = Some(std::fs::read_to_string(dir.join(f)).unwrap());
    }
    o
}

fn first_difference(a: &str, b: &str) -> String {
    let i = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let ctx = |s: &str| {
        let (mut lo, mut hi) = (i.saturating_sub(40), (i + 40).min(s.len()));
        while !s.is_char_boundary(lo) {
            lo -= 1;
        }
        while !s.is_char_boundary(hi) {
            hi += 1;
        }
        format!("{:?}", &s[lo..hi])
    };
    format!(
        "first difference at byte {i}: ours {} vs transformers {}",
        ctx(a),
        ctx(b)
    )
}

fn golden_manifest() -> golden::Manifest {
    let path = root().join("goldens/chat-templates/manifest.json");
    golden::check(&path, &[]).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn goldens_byte_equal_for_every_family() {
    let m = golden_manifest();
    let args = &m.json["args"];
    let mut templates = std::collections::HashMap::new();
    for f in args["families"].as_array().unwrap() {
        let path = root().join(f["template"].as_str().unwrap());
        assert_eq!(
            golden::sha256_file(&path).unwrap(),
            f["template_sha256"].as_str().unwrap(),
            "{}: the fixture differs from the one the goldens were rendered from",
            path.display()
        );
        let mut t = ChatTemplate::new(&path.display().to_string(), &template_source(&path)).unwrap();
        for (k, v) in f["special_tokens"].as_object().unwrap() {
            t = t.with_token(k, v.as_str());
        }
        templates.insert(f["family"].as_str().unwrap().to_string(), t);
    }
    let (mut failures, mut count) = (Vec::new(), std::collections::BTreeMap::<String, usize>::new());
    for case in args["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let fam = case["family"].as_str().unwrap();
        let want = std::fs::read_to_string(m.dir.join(case["file"].as_str().unwrap())).unwrap();
        match templates[fam].render(&messages(&case["messages"]), &options(case, &m.dir)) {
            Ok(got) if got == want => *count.entry(fam.to_string()).or_default() += 1,
            Ok(got) => failures.push(format!("{id}: {}", first_difference(&got, &want))),
            Err(e) => failures.push(format!("{id}: {e}")),
        }
    }
    println!("byte-equal cases per family: {count:?}");
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // the four families the issue names, each with cases (a manifest that lost one fails here)
    for fam in [
        "qwen3", "qwen3_5", "llama3_1", "llama3_2", "llama3_3", "smollm2", "smollm3",
    ] {
        assert!(count.get(fam).is_some_and(|&n| n >= 4), "family {fam}: {count:?}");
    }
}

#[test]
fn qwen3_through_tokenizer_config_matches_the_golden() {
    // the tiny fixture tokenizer with Qwen3's real tokenizer_config.json beside it
    let dir = std::env::temp_dir().join(format!("wgllm-chat-qwen3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        root().join("goldens/qwen3-tiny/model/tokenizer.json"),
        dir.join("tokenizer.json"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("Qwen3-tokenizer_config.json"),
        dir.join("tokenizer_config.json"),
    )
    .unwrap();
    let tk = Tokenizer::from_dir(&dir).unwrap().unwrap();
    assert_eq!(tk.special_token("eos_token"), Some("<|im_end|>"));
    assert_eq!(tk.special_token("bos_token"), None);
    let m = golden_manifest();
    let mut n = 0;
    for case in m.json["args"]["cases"].as_array().unwrap() {
        if case["family"] != "qwen3" {
            continue;
        }
        let want = std::fs::read_to_string(m.dir.join(case["file"].as_str().unwrap())).unwrap();
        let got = tk
            .apply_chat_template(&messages(&case["messages"]), &options(case, &m.dir))
            .unwrap();
        assert!(got == want, "{}: {}", case["id"], first_difference(&got, &want));
        n += 1;
    }
    assert!(n > 0, "no qwen3 cases in the manifest");
    std::fs::remove_dir_all(&dir).ok();
}

/// Templates transformers refuses and we render, each with the reason. Data, not silence: an
/// entry that starts agreeing with transformers fails the test until it is removed here.
const KNOWN_DIVERGENCES: [(&str, &str); 3] = [
    (
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        "loops over `tools`, which is none without tools: Jinja2 raises (NoneType is not iterable), minijinja's for loop iterates none as empty",
    ),
    (
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "the same: a for loop over `tools` = none",
    ),
    (
        "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        "the same: a for loop over `tools` = none",
    ),
];

/// Every template of the collection on a standard conversation (system, user, assistant, user;
/// add_generation_prompt), against what transformers did with it (goldens/chat-templates,
/// `args.collection`): the same bytes where it rendered, a refusal that names the reason where it
/// refused (the template's own message when it raised one).
#[test]
fn the_collection_renders_as_transformers_or_refuses_by_name() {
    let m = golden_manifest();
    let coll = &m.json["args"]["collection"];
    let msgs = messages(&coll["messages"]);
    let opts = ChatOptions {
        add_generation_prompt: coll["add_generation_prompt"].as_bool().unwrap(),
        ..ChatOptions::default()
    };
    let entries = coll["templates"].as_array().unwrap();
    // every fixture template is in the capture (a new fixture needs a re-capture)
    let mut on_disk: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".jinja") || n.ends_with(".json"))
        .collect();
    on_disk.sort();
    let captured: Vec<String> = entries
        .iter()
        .map(|e| e["template"].as_str().unwrap().rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        on_disk, captured,
        "fixtures and the captured collection differ: re-run tools/oracle/chat_templates.py"
    );

    let (mut rendered, mut refused, mut diverged, mut failures) = (0, Vec::new(), Vec::new(), Vec::new());
    for e in entries {
        let path = root().join(e["template"].as_str().unwrap());
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(
            golden::sha256_file(&path).unwrap(),
            e["template_sha256"].as_str().unwrap(),
            "{name}"
        );
        let mut ours = ChatTemplate::new(&name, &template_source(&path))
            .map(|t| t.with_clock(coll["clock_unix"].as_i64().unwrap()));
        for (k, v) in coll["special_tokens"].as_object().unwrap() {
            ours = ours.map(|t| t.with_token(k, v.as_str()));
        }
        let ours = ours.and_then(|t| t.render(&msgs, &opts));
        let known = KNOWN_DIVERGENCES.iter().find(|(n, _)| *n == name);
        match (e["file"].as_str(), ours) {
            (Some(f), Ok(got)) => {
                let want = std::fs::read_to_string(m.dir.join(f)).unwrap();
                if got == want {
                    rendered += 1;
                } else {
                    failures.push(format!("{name}: {}", first_difference(&got, &want)));
                }
            }
            (Some(_), Err(err)) => failures.push(format!("{name}: transformers renders it, we refuse: {err}")),
            (None, Err(Error::ChatTemplate { template, detail })) if template == name && !detail.trim().is_empty() => {
                let theirs = e["refused"].as_str().unwrap();
                // a template's own raise_exception message must come through in ours
                match theirs.strip_prefix("TemplateError: ") {
                    Some(msg) if !detail.contains(msg) => failures.push(format!(
                        "{name}: the template says {msg:?}, our refusal does not: {detail}"
                    )),
                    _ => refused.push(format!("{name}: {detail} (transformers: {theirs})")),
                }
            }
            (None, Err(err)) => failures.push(format!("{name}: refused without a named reason: {err}")),
            (None, Ok(_)) => match known {
                Some((_, why)) => diverged.push(format!("{name}: {why}")),
                None => failures.push(format!(
                    "{name}: transformers refuses ({}), we render",
                    e["refused"].as_str().unwrap()
                )),
            },
        }
        if known.is_some() && !(e["file"].is_null() && diverged.last().is_some_and(|d| d.starts_with(&name))) {
            failures.push(format!(
                "{name}: listed in KNOWN_DIVERGENCES but agrees with transformers now"
            ));
        }
    }
    println!(
        "chat templates: {} in the collection: {rendered} rendered byte-equal to transformers, {} refused \
         (as transformers does), {} known divergences",
        entries.len(),
        refused.len(),
        diverged.len()
    );
    for r in refused.iter().chain(&diverged) {
        println!("  {r}");
    }
    assert!(rendered > 0, "no template of {} rendered", entries.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
