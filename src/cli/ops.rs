//! `wgllm ops`: the support matrix. One row per (op, dtypes) seen in the parity cases, one column
//! per device; each cell is `yes` or the device's reason for refusing.
use crate::backend::all_devices;
use crate::backend::Support;
use crate::error::Result;
use crate::parity::cases;
use serde_json::json;
use std::collections::BTreeSet;
use std::process::ExitCode;

pub fn run(as_json: bool) -> Result<ExitCode> {
    let devices = all_devices();
    // backends built in but absent here: a column each, every cell refused with the reason
    let absent = crate::backend::absent_backends();
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    for case in cases::all() {
        let desc = case.desc();
        let label = desc.label();
        if !seen.insert(label.clone()) {
            continue;
        }
        let mut cells: Vec<(String, Support)> = devices.iter().map(|d| (d.name(), d.supports(&desc))).collect();
        cells.extend(
            absent
                .iter()
                .map(|(b, why)| (b.clone(), Support::No(format!("absent: {why}")))),
        );
        rows.push((desc.op.name(), label, cells));
    }
    if as_json {
        let ops: Vec<_> = rows
            .iter()
            .map(|(op, label, cells)| {
                let support: serde_json::Map<String, serde_json::Value> = cells
                    .iter()
                    .map(|(d, s)| {
                        (
                            d.clone(),
                            match s {
                                Support::Yes => json!("yes"),
                                Support::No(r) => json!({"no": r}),
                            },
                        )
                    })
                    .collect();
                json!({"op": op, "dtypes": label, "support": support})
            })
            .collect();
        let mut names: Vec<String> = devices.iter().map(|d| d.name()).collect();
        names.extend(absent.iter().map(|(b, _)| b.clone()));
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"devices": names, "ops": ops})).unwrap()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let w = rows.iter().map(|r| r.1.len()).max().unwrap_or(10);
    print!("{:w$}", "op(dtypes)");
    for d in devices
        .iter()
        .map(|d| d.name())
        .chain(absent.iter().map(|(b, _)| b.clone()))
    {
        print!("  {:>16}", d);
    }
    println!();
    let mut reasons = Vec::new();
    for (_, label, cells) in &rows {
        print!("{label:w$}");
        for (dev, s) in cells {
            match s {
                Support::Yes => print!("  {:>16}", "yes"),
                Support::No(r) => {
                    reasons.push(format!("{label} on {dev}: {r}"));
                    print!("  {:>16}", format!("no[{}]", reasons.len()))
                }
            }
        }
        println!();
    }
    for (k, r) in reasons.iter().enumerate() {
        println!("[{}] {r}", k + 1);
    }
    Ok(ExitCode::SUCCESS)
}
