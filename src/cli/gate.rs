//! `wgllm gate`: the golden walker and the model gates outside cargo test (same code as
//! tests/model_gate.rs), so a GPU machine can run them with just the binary and the repository.
use crate::backend::{pick_device, select_devices};
use crate::engine::Engine;
use crate::error::Result;
use crate::parity::{golden, model_gate};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub struct GateArgs {
    /// The goldens directory
    #[arg(long, default_value = "goldens")]
    goldens: PathBuf,
    /// Where the per-device greedy anchors live
    #[arg(long, default_value = "tests/anchors")]
    anchors: PathBuf,
    /// One device (`cpu`, `wgpu:NAME`, ...). Default: every GPU, CPU drivers such as llvmpipe
    /// included (the cpu backend when there is none), like tests/model_gate.rs
    #[arg(long)]
    device: Option<String>,
    /// Record the greedy anchor for this device (after the oracle check passes)
    #[arg(long)]
    bless: bool,
    /// Only the golden cases whose name contains this
    #[arg(long)]
    case: Option<String>,
}

pub fn run(a: GateArgs) -> Result<ExitCode> {
    let pending = golden::pending(&a.goldens);
    let (mut pass, mut fail) = (0, 0);
    let paths = golden::manifests(&a.goldens);
    if paths.is_empty() {
        println!(
            "no manifests under {}: 0 passed, 1 failed, 0 skipped",
            a.goldens.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    // the devices the model gates run on, by name: opened again for each gate (an engine owns its
    // device)
    let specs: Vec<String> = match &a.device {
        Some(s) => vec![s.clone()],
        None => {
            let gpus: Vec<String> = select_devices("gpu")?.iter().map(|d| d.name()).collect();
            if gpus.is_empty() {
                vec!["cpu".to_string()]
            } else {
                gpus
            }
        }
    };
    for path in paths {
        let m = match golden::check(&path, &pending) {
            Ok(m) => {
                pass += 1;
                println!("goldens::{}  pass", m.case);
                m
            }
            Err(e) => {
                fail += 1;
                println!("goldens::{}  FAIL  {e}", path.display());
                continue;
            }
        };
        if !golden::has_model_gate(&m) || a.case.as_ref().is_some_and(|c| !m.case.contains(c.as_str())) {
            continue;
        }
        let model = match model_gate::model_path(&m, Path::new(".")) {
            Ok(p) => p,
            Err(why) if std::env::var("WGLLM_REQUIRE_MODELS").is_ok_and(|v| v == "1") => {
                fail += 1;
                println!("model::{}  FAIL  {why}", m.case);
                continue;
            }
            Err(why) => {
                println!("model::{}  SKIP  {why}", m.case);
                continue;
            }
        };
        type Gate = fn(&golden::Manifest, &mut Engine) -> std::result::Result<String, String>;
        let gates: [(&str, Option<Gate>); 3] = [
            ("teacher_forced", Some(model_gate::teacher_forced)),
            ("hidden", Some(model_gate::hidden)),
            ("greedy", None),
        ];
        for ((name, gate), spec) in gates.iter().flat_map(|g| specs.iter().map(move |s| (*g, s))) {
            let dev = pick_device(Some(spec))?;
            let dn = dev.name();
            let mut e = Engine::load(&model, dev, 4096, &mut |_, _| {})?;
            let t0 = std::time::Instant::now();
            let r = match gate {
                Some(g) => g(&m, &mut e),
                None => model_gate::greedy(&m, &mut e, &a.anchors, a.bless),
            };
            match r {
                Ok(s) => {
                    pass += 1;
                    println!(
                        "model::{}::{name}::{dn}  pass  {s} ({:.2}s)",
                        m.case,
                        t0.elapsed().as_secs_f64()
                    );
                }
                Err(er) => {
                    fail += 1;
                    println!("model::{}::{name}::{dn}  FAIL  {er}", m.case);
                }
            }
        }
    }
    println!("{pass} passed, {fail} failed, 0 skipped");
    Ok(if fail > 0 || pass == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
