//! `wgllm parity`: every case on every selected device, outside cargo test; and `parity diff`.
use crate::backend::{select_devices, Backend};
use crate::error::{Error, Result};
use crate::parity::report::{diff, Report, Row};
use crate::parity::{cases, run};
use clap::{Args, Subcommand};
use std::process::ExitCode;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ParityArgs {
    #[command(subcommand)]
    cmd: Option<ParityCmd>,
    /// Device(s) to check: `wgpu` (every adapter), `wgpu:NAME` (name substring), `cuda`, `hip`
    /// (native hip/ kernels, with features `cuda` / `hip`). Default: every GPU device.
    #[arg(long)]
    device: Option<String>,
    /// Write every case's status and error to this file
    #[arg(long)]
    json: Option<String>,
    /// Only cases whose id contains this
    #[arg(long)]
    filter: Option<String>,
}

#[derive(Subcommand)]
enum ParityCmd {
    /// What changed between two parity runs: new failures, fixes, error growth
    Diff { a: String, b: String },
}

fn load(path: &str) -> Result<Report> {
    let s = std::fs::read_to_string(path).map_err(|e| Error::File {
        path: path.into(),
        detail: e.to_string(),
    })?;
    serde_json::from_str(&s).map_err(|e| Error::File {
        path: path.into(),
        detail: format!("not a parity report: {e}"),
    })
}

pub fn run(a: ParityArgs) -> Result<ExitCode> {
    if let Some(ParityCmd::Diff { a, b }) = a.cmd {
        let d = diff(&load(&a)?, &load(&b)?);
        d.print();
        return Ok(if d.is_regression() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    let spec = a.device.as_deref().unwrap_or("gpu");
    // native backends built in but absent here (no runtime or device): their cases are reported
    // as skipped with the reason, never passed
    let fam = spec.split([':', '/']).next().unwrap_or("").to_ascii_lowercase();
    let absent: Vec<(String, String)> = crate::backend::absent_backends()
        .into_iter()
        .filter(|(b, _)| spec == "gpu" || *b == fam)
        .collect();
    let selected = match select_devices(spec) {
        Err(_) if !absent.is_empty() => Vec::new(),
        r => r?,
    };
    let devices: Vec<Box<dyn Backend>> = selected.into_iter().filter(|d| d.name() != "cpu").collect();
    if devices.is_empty() && absent.is_empty() {
        return Err(Error::NoDevice(
            "no GPU device to check (cpu is the reference); see `wgllm devices`".into(),
        ));
    }
    let mut rows = Vec::new();
    for case in cases::all() {
        if a.filter.as_ref().is_some_and(|f| !case.id.contains(f.as_str())) {
            continue;
        }
        let want = if devices.is_empty() {
            Err(String::new())
        } else {
            run::reference(&case)
        };
        for dev in &devices {
            let outcome = run::check(&case, dev.as_ref(), &want);
            let line = match &outcome {
                run::Outcome::Pass { compared, nmse } => format!("pass  n={compared} nmse={nmse:.2e}"),
                run::Outcome::Fail { error } => format!("FAIL  {error}"),
                run::Outcome::Skip { reason } => format!("skip  {reason}"),
            };
            println!("{}::{}  {line}", case.id, dev.name());
            rows.push(Row {
                id: case.id.clone(),
                family: case.family.to_string(),
                device: dev.name(),
                outcome,
            });
        }
        for (b, why) in &absent {
            let reason = format!("backend absent: {why}");
            println!("{}::{b}  skip  {reason}", case.id);
            rows.push(Row {
                id: case.id.clone(),
                family: case.family.to_string(),
                device: b.clone(),
                outcome: run::Outcome::Skip { reason },
            });
        }
    }
    let mut names: Vec<String> = devices.iter().map(|d| d.name()).collect();
    names.extend(absent.iter().map(|(b, _)| b.clone()));
    let report = Report {
        wgllm: env!("CARGO_PKG_VERSION").into(),
        devices: names,
        rows,
    };
    let c = report.counts();
    if let Some(path) = &a.json {
        let s = serde_json::to_string_pretty(&report).unwrap();
        std::fs::write(path, s).map_err(|e| Error::File {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    }
    println!("{}", c.line());
    if c.failed > 0 || c.passed == 0 {
        if c.passed == 0 {
            eprintln!("zero comparisons passed: that is a failure, not a success");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
