//! The cross-device op harness: one test per (case x wgpu device), each compared with the CPU
//! reference. Lists as `ops::rms_norm[bf16,5x7x4097]::wgpu/llvmpipe`.
//!
//! A case a device refuses is ignored at run time with `unsupported: <reason>` and counted as
//! skipped. The run ends with `N passed, N failed, N skipped` and fails if nothing was compared.
//! With WGLLM_REQUIRE_GPU=1 (set by CI), finding no wgpu adapter is a failure.
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::sync::Arc;
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::Backend;
use wgllm::parity::{cases, run};

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let devices: Vec<Arc<WgpuBackend>> = WgpuBackend::all().into_iter().map(Arc::new).collect();
    let require = std::env::var("WGLLM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    if devices.is_empty() {
        eprintln!("ops harness: no wgpu adapter found (install mesa-vulkan-drivers for lavapipe)");
        if require {
            eprintln!("0 passed, 1 failed, 0 skipped (WGLLM_REQUIRE_GPU=1 and no adapter)");
            return std::process::ExitCode::FAILURE;
        }
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
    }
    let filtering = args.filter.is_some() || !args.skip.is_empty();
    let c = libtest_mimic::run(&args, trials);
    println!("{} passed, {} failed, {} skipped", c.num_passed, c.num_failed, c.num_ignored);
    if c.has_failed() {
        return std::process::ExitCode::FAILURE;
    }
    if c.num_passed == 0 && !args.list && !filtering {
        eprintln!("ops harness: zero comparisons ran; that is a failure, not a pass");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
