//! Parity reports (JSON) and the diff between two of them.
use super::run::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub id: String,
    pub family: String,
    pub device: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub wgllm: String,
    pub devices: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

impl Report {
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for r in &self.rows {
            match r.outcome {
                Outcome::Pass { .. } => c.passed += 1,
                Outcome::Fail { .. } => c.failed += 1,
                Outcome::Skip { .. } => c.skipped += 1,
            }
        }
        c
    }
}

/// What changed from `a` to `b`. Rows are matched by (case id, device); when each report covers
/// exactly one device and the devices differ, by case id alone (two devices, same revision).
#[derive(Debug, Default)]
pub struct Diff {
    pub new_failures: Vec<String>,
    pub fixes: Vec<String>,
    pub error_growth: Vec<String>,
    pub newly_skipped: Vec<String>,
    pub newly_run: Vec<String>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

impl Diff {
    pub fn is_regression(&self) -> bool {
        !self.new_failures.is_empty() || !self.error_growth.is_empty() || !self.newly_skipped.is_empty()
    }
    pub fn print(&self) {
        let sections = [
            ("new failures", &self.new_failures),
            ("error growth (nmse up more than 4x)", &self.error_growth),
            ("newly skipped", &self.newly_skipped),
            ("fixed", &self.fixes),
            ("newly run", &self.newly_run),
            ("only in A", &self.only_in_a),
            ("only in B", &self.only_in_b),
        ];
        for (title, items) in sections {
            if items.is_empty() {
                continue;
            }
            println!("{title}: {}", items.len());
            for i in items {
                println!("  {i}");
            }
        }
        println!(
            "diff: {} new failures, {} fixed, {} error growth, {} newly skipped",
            self.new_failures.len(),
            self.fixes.len(),
            self.error_growth.len(),
            self.newly_skipped.len()
        );
    }
}

pub fn diff(a: &Report, b: &Report) -> Diff {
    let by_id = a.devices.len() == 1 && b.devices.len() == 1 && a.devices != b.devices;
    let key = |r: &Row| {
        if by_id {
            r.id.clone()
        } else {
            format!("{}::{}", r.id, r.device)
        }
    };
    let ma: BTreeMap<String, &Row> = a.rows.iter().map(|r| (key(r), r)).collect();
    let mb: BTreeMap<String, &Row> = b.rows.iter().map(|r| (key(r), r)).collect();
    let mut d = Diff::default();
    for (k, ra) in &ma {
        let Some(rb) = mb.get(k) else {
            d.only_in_a.push(k.clone());
            continue;
        };
        match (&ra.outcome, &rb.outcome) {
            (Outcome::Fail { .. }, Outcome::Fail { .. }) | (Outcome::Skip { .. }, Outcome::Skip { .. }) => {}
            (_, Outcome::Fail { error }) => d.new_failures.push(format!("{k}: {error}")),
            (Outcome::Fail { .. }, Outcome::Pass { .. }) => d.fixes.push(k.clone()),
            (Outcome::Pass { .. }, Outcome::Skip { reason }) => d.newly_skipped.push(format!("{k}: {reason}")),
            (Outcome::Skip { .. }, Outcome::Pass { .. }) | (Outcome::Fail { .. }, Outcome::Skip { .. }) => {
                d.newly_run.push(k.clone())
            }
            (Outcome::Pass { nmse: ea, .. }, Outcome::Pass { nmse: eb, .. }) => {
                if *eb > 4.0 * ea.max(1e-14) {
                    d.error_growth.push(format!("{k}: nmse {ea:.2e} -> {eb:.2e}"));
                }
            }
        }
    }
    for k in mb.keys() {
        if !ma.contains_key(k) {
            d.only_in_b.push(k.clone());
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    fn rep(dev: &str, rows: Vec<(&str, Outcome)>) -> Report {
        Report {
            wgllm: "t".into(),
            devices: vec![dev.into()],
            rows: rows
                .into_iter()
                .map(|(id, o)| Row {
                    id: id.into(),
                    family: "f".into(),
                    device: dev.into(),
                    outcome: o,
                })
                .collect(),
        }
    }
    #[test]
    fn diff_finds_failures_fixes_growth() {
        let pass = |e| Outcome::Pass { compared: 1, nmse: e };
        let fail = Outcome::Fail { error: "x".into() };
        let a = rep("d", vec![("a", pass(1e-9)), ("b", fail.clone()), ("c", pass(1e-9))]);
        let b = rep("d", vec![("a", fail), ("b", pass(1e-9)), ("c", pass(1e-6))]);
        let d = diff(&a, &b);
        assert_eq!(d.new_failures.len(), 1);
        assert_eq!(d.fixes.len(), 1);
        assert_eq!(d.error_growth.len(), 1);
        assert!(d.is_regression());
    }
}
