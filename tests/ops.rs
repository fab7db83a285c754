//! The cross-device op harness: one test per (case x device: every wgpu adapter, and the native
//! `cuda`/`hip` devices when built with those features), each compared with the CPU reference.
//! Lists as `ops::rms_norm[bf16,5x7x4097]::wgpu/llvmpipe`.
//!
//! A case a device refuses is ignored at run time with `unsupported: <reason>` and counted as
//! skipped. A native backend built in but absent here (no runtime, no device) gets one trial per
//! case too (`ops::<case>::hip`), ignored with the reason: skipped, never passed. The run ends with `N passed, N failed, N skipped` and fails if nothing was compared.
//! With WGLLM_REQUIRE_GPU=1 (set by CI), finding no wgpu adapter is a failure.
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::sync::Arc;
use wgllm::backend::wgpu::{Broken, WgpuBackend};
use wgllm::backend::Backend;
use wgllm::op::Op;
use wgllm::parity::{cases, run};

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let mut devices: Vec<Arc<dyn Backend>> = WgpuBackend::all()
        .into_iter()
        .map(|b| Arc::new(b) as Arc<dyn Backend>)
        .collect();
    let require = std::env::var("WGLLM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    if devices.is_empty() {
        eprintln!("ops harness: no wgpu adapter found (install mesa-vulkan-drivers for lavapipe)");
        if require {
            eprintln!("0 passed, 1 failed, 0 skipped (WGLLM_REQUIRE_GPU=1 and no adapter)");
            return std::process::ExitCode::FAILURE;
        }
    }
    for (b, _) in wgllm::backend::native_devices() {
        devices.push(Arc::from(b));
    }
    let absent = wgllm::backend::absent_backends();
    for (b, why) in &absent {
        eprintln!("ops harness: backend {b} absent: {why}; its cases count as skipped");
    }
    let all = cases::all();
    let mut trials = Vec::new();
    for case in all {
        let case = Arc::new(case);
        for dev in &devices {
            let (case, dev) = (case.clone(), dev.clone());
            let name = format!("ops::{}::{}", case.id, dev.name());
            trials.push(Trial::ignorable_test(name, move || {
                let want = run::reference(&case);
                match run::check(&case, dev.as_ref(), &want) {
                    run::Outcome::Pass { .. } => Ok(Completion::Completed),
                    run::Outcome::Skip { reason } => Ok(Completion::ignored_with(reason)),
                    run::Outcome::Fail { error } => Err(Failed::from(error)),
                }
            }));
        }
        for (b, why) in &absent {
            let why = why.clone();
            trials.push(Trial::ignorable_test(format!("ops::{}::{b}", case.id), move || {
                Ok(Completion::ignored_with(why))
            }));
        }
    }
    trials.extend(teeth(&devices));
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
        eprintln!("ops harness: zero comparisons ran; that is a failure, not a pass");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

/// Teeth: known bugs, built on purpose as kernel variants, must turn named parity cases red.
///   teeth::out_dtype_from_input::gated_attention[bf16->f32,..]   every case whose output dtype
///       differs from its input's goes red when the output binding takes the input's dtype;
///   teeth::chunk_boundary_off_by_one::gdn_chunked[..]            every case of T >= 64 (a chunk
///       boundary is crossed or reached) goes red; shorter ones stay green (the bug needs a boundary).
/// A trial passes when the broken variant's verdict is the expected one.
fn teeth(devices: &[Arc<dyn Backend>]) -> Vec<Trial> {
    let mut trials = Vec::new();
    // the broken variants are the wgpu backend's own: its adapters, opened as `WgpuBackend`
    let names: Vec<String> = devices.iter().map(|d| d.name()).collect();
    let wgpus: Vec<Arc<wgllm::backend::wgpu::WgpuBackend>> = wgllm::backend::wgpu::WgpuBackend::all()
        .into_iter()
        .filter(|w| names.contains(&w.name()))
        .map(Arc::new)
        .collect();
    for case in cases::all() {
        let (broken, tag, expect_red) = match &case.op {
            Op::GatedAttention { .. } if case.inputs[0].desc.dtype != case.outputs[0].dtype => {
                (Broken::OutDtypeFromInput, "out_dtype_from_input", true)
            }
            Op::GdnChunked => (
                Broken::ChunkBoundaryOffByOne,
                "chunk_boundary_off_by_one",
                case.inputs[0].desc.shape[0] >= wgllm::op::GDN_CHUNK,
            ),
            _ => continue,
        };
        let case = Arc::new(case);
        for w in wgpus.iter() {
            let (case, w) = (case.clone(), w.clone());
            trials.push(Trial::ignorable_test(
                format!("teeth::{tag}::{}::{}", case.id, w.name()),
                move || {
                    let dev: &dyn Backend = w.as_ref();
                    if let wgllm::backend::Support::No(r) = dev.supports(&case.desc()) {
                        return Ok(Completion::ignored_with(format!("unsupported: {r}")));
                    }
                    let want = run::reference(&case).map_err(Failed::from)?;
                    let verdict = match run::execute_with(&case, dev, &|i, o| w.run_broken(&case.op, i, o, broken)) {
                        Ok(got) => run::compare_outputs(&case, &got, &want),
                        Err(error) => run::Outcome::Fail { error },
                    };
                    match (verdict, expect_red) {
                        (run::Outcome::Fail { error }, true) => {
                            println!("    red as expected: {error}");
                            Ok(Completion::Completed)
                        }
                        (run::Outcome::Pass { .. }, false) => Ok(Completion::Completed),
                        (run::Outcome::Pass { nmse, .. }, true) => Err(Failed::from(format!(
                            "the broken variant passed (nmse {nmse:.2e}): this case has no teeth"
                        ))),
                        (run::Outcome::Skip { reason }, _) => Ok(Completion::ignored_with(reason)),
                        (v, false) => Err(Failed::from(format!(
                            "expected green without a chunk boundary, got {v:?}"
                        ))),
                    }
                },
            ));
        }
    }
    trials
}
