//! The cross-device parity harness: cases, comparison, running, reports and diffs.
pub mod case;
pub mod cases;
pub mod compare;
pub mod golden;
pub mod lone_turns;
pub mod model_gate;
pub mod paged_guards;
pub mod paged_invariance;
pub mod report;
pub mod run;
pub mod state_invariance;

/// The lock every parity check takes while it has set a device's batch invariance: the mode is
/// the device's, and test threads share devices, so without it one check's reset to `Off` could
/// land inside another's run and change the kernels that run records.
static MODE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `f` with `dev` set to `mode`, then back to `Off`, holding `MODE` throughout.
pub fn with_invariance<T>(
    dev: &dyn crate::backend::Backend,
    mode: crate::backend::BatchInvariance,
    f: impl FnOnce() -> T,
) -> T {
    let _held = MODE.lock().unwrap_or_else(|e| e.into_inner());
    dev.set_batch_invariant(mode);
    let r = f();
    dev.set_batch_invariant(crate::backend::BatchInvariance::Off);
    r
}
