//! The cross-device parity harness: cases, comparison, running, reports and diffs.
pub mod case;
pub mod cases;
pub mod compare;
pub mod golden;
pub mod model_gate;
pub mod paged_guards;
pub mod paged_invariance;
pub mod report;
pub mod run;
pub mod state_invariance;
