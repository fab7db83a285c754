//! The golden walker and the model gates, on cpu and on every wgpu adapter.
//!   goldens::<case>                         the manifest parses, its files match their sha256, a runner exists
//!   model::<case>::{greedy,teacher_forced,hidden}::<device>
//! WGLLM_BLESS=1 records the greedy anchors (tests/anchors/<case>/<device>.json) after the oracle
//! check passes; commit them with the reason. Goldens themselves change only through tools/oracle.
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::{Path, PathBuf};
use wgllm::backend::{cpu::CpuBackend, wgpu::WgpuBackend, Backend};
use wgllm::engine::Engine;
use wgllm::parity::{golden, model_gate};

type Gate = fn(&golden::Manifest, &mut Engine) -> Result<String, String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn device(name: &str) -> Option<Box<dyn Backend>> {
    if name == "cpu" {
        return Some(Box::new(CpuBackend::new()));
    }
    WgpuBackend::all()
        .into_iter()
        .find(|b| b.name() == name)
        .map(|b| Box::new(b) as Box<dyn Backend>)
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    // wgpu's (and our) log records on stderr as in the CLI: warnings by default, RUST_LOG on top
    let _ = env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .parse_default_env()
        .try_init();
    let goldens = root().join("goldens");
    let pending = golden::pending(&goldens);
    let mut names: Vec<String> = vec!["cpu".into()];
    names.extend(WgpuBackend::all().iter().map(|b| b.name()));
    let bless = std::env::var("WGLLM_BLESS").is_ok_and(|v| v == "1");
    let paths = golden::manifests(&goldens);
    let mut trials = vec![Trial::test("goldens::found", {
        let n = paths.len();
        move || {
            if n == 0 {
                Err("no goldens/*/manifest.json found: the walker compared nothing".into())
            } else {
                Ok(())
            }
        }
    })];
    for path in paths {
        let case = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let checked = golden::check(&path, &pending);
        let verdict = checked.as_ref().map(|_| ()).map_err(|e| e.clone());
        trials.push(Trial::test(format!("goldens::{case}"), move || {
            verdict.map_err(Failed::from)
        }));
        let Ok(m) = checked else { continue };
        if !golden::has_model_gate(&m) {
            continue;
        }
        // a real model outside the repository: absent is a skip with the reason here, a failure
        // where WGLLM_REQUIRE_MODELS=1 (CI downloads it)
        let model = model_gate::model_path(&m, &root());
        let require = std::env::var("WGLLM_REQUIRE_MODELS").is_ok_and(|v| v == "1");
        if let Err(why) = &model {
            if require {
                let why = why.clone();
                trials.push(Trial::test(format!("model::{}::present", m.case), move || {
                    Err(Failed::from(why.clone()))
                }));
            } else {
                for dev_name in &names {
                    for gname in ["teacher_forced", "hidden", "greedy"] {
                        let why = format!("skipped: {why}");
                        trials.push(Trial::ignorable_test(
                            format!("model::{}::{gname}::{dev_name}", m.case),
                            move || Ok(Completion::ignored_with(why.clone())),
                        ));
                    }
                }
            }
            continue;
        }
        let model = std::sync::Arc::new(model.unwrap());
        let m = std::sync::Arc::new(m);
        for dev_name in &names {
            let gates: [(&str, Gate); 3] = [
                ("teacher_forced", model_gate::teacher_forced),
                ("hidden", model_gate::hidden),
                ("greedy", |_, _| unreachable!()),
            ];
            for (gname, gate) in gates {
                let (m, dev_name, model) = (m.clone(), dev_name.clone(), model.clone());
                let name = format!("model::{}::{gname}::{dev_name}", m.case);
                trials.push(Trial::ignorable_test(name, move || {
                    let dev = device(&dev_name).ok_or_else(|| Failed::from(format!("device {dev_name} vanished")))?;
                    let mut e =
                        Engine::load(&model, dev, 4096, &mut |_, _| {}).map_err(|e| Failed::from(e.to_string()))?;
                    let r = if gname == "greedy" {
                        model_gate::greedy(&m, &mut e, &root().join("tests/anchors"), bless)
                    } else {
                        gate(&m, &mut e)
                    };
                    match r {
                        Ok(summary) => {
                            println!("    {summary}");
                            Ok(Completion::Completed)
                        }
                        Err(msg) if msg.starts_with("unsupported op") => Ok(Completion::ignored_with(msg)),
                        Err(msg) => Err(Failed::from(msg)),
                    }
                }));
            }
        }
    }
    let filtering = args.filter.is_some() || !args.skip.is_empty();
    let c = libtest_mimic::run(&args, trials);
    println!(
        "{} passed, {} failed, {} skipped",
        c.num_passed, c.num_failed, c.num_ignored
    );
    if c.has_failed() {
        return std::process::ExitCode::FAILURE;
    }
    if c.num_passed == 0 && !args.list && !filtering {
        eprintln!("model gate: nothing passed; that is a failure");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
