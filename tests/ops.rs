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
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::Backend;
use wgllm::parity::{cases, run};
mod tooth;
use tooth::teeth;

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    // wgpu's (and our) log records on stderr as in the CLI: warnings by default, RUST_LOG on top
    let _ = env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .parse_default_env()
        .try_init();
    let wgpu: Vec<Arc<WgpuBackend>> = WgpuBackend::all().into_iter().map(Arc::new).collect();
    let mut devices: Vec<Arc<dyn Backend>> = wgpu.iter().map(|b| b.clone() as Arc<dyn Backend>).collect();
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
    trials.extend(invariance(&devices));
    trials.extend(sliced_invariance(&wgpu));
    trials.extend(guards(&wgpu));
    trials.extend(teeth(&wgpu));
    let filtering = args.filter.is_some() || !args.skip.is_empty();
    let c = libtest_mimic::run(&args, trials);
    println!(
        "{} passed, {} failed, {} skipped",
        c.num_passed, c.num_failed, c.num_ignored
    );
    let portable = args.list || portability(&wgpu, filtering);
    if c.has_failed() || !portable {
        return std::process::ExitCode::FAILURE;
    }
    if c.num_passed == 0 && !args.list && !filtering {
        eprintln!("ops harness: zero comparisons ran; that is a failure, not a pass");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

/// "Any GPU", checked where we cannot run it: every kernel specialization the cases compiled on
/// each adapter goes through naga's MSL (Metal) and HLSL (DX12) writers; a failure that
/// `portability::NOT_PORTABLE` does not list (or a listed one that now translates) fails the run,
/// and so does a full run that compiled no kernel.
fn portability(wgpu: &[Arc<WgpuBackend>], filtering: bool) -> bool {
    let mut ok = true;
    for w in wgpu {
        let r = wgllm::backend::wgpu::portability::check(&w.kernel_sources());
        println!("{}: {}", w.name(), r.summary());
        ok &= r.unexpected.is_empty() && (r.kernels > 0 || filtering);
    }
    ok
}

/// Batch invariance of the paged attention ops (src/parity/paged_invariance.rs), per device:
/// `invariance::paged_attention[kvf32]::wgpu/llvmpipe`; and of the hybrid-state ops
/// (src/parity/state_invariance.rs): `invariance::gdn_batch[state]::wgpu/llvmpipe`.
fn invariance(devices: &[Arc<dyn Backend>]) -> Vec<Trial> {
    use wgllm::dtype::DType;
    let cpu: Arc<dyn Backend> = Arc::new(wgllm::backend::cpu::CpuBackend::new());
    let mut trials = Vec::new();
    for dev in devices.iter().chain(std::iter::once(&cpu)) {
        for (gated, kv) in [
            (false, DType::F32),
            (false, DType::F16),
            (true, DType::F32),
            (true, DType::BF16),
        ] {
            let op = if gated {
                "paged_gated_attention"
            } else {
                "paged_attention"
            };
            let name = format!("invariance::{op}[kv{kv}]::{}", dev.name());
            let dev = dev.clone();
            trials.push(Trial::ignorable_test(name, move || {
                // a device that refuses the op (a native one) answers `unsupported op ...`: skipped
                match wgllm::parity::paged_invariance::check(dev.as_ref(), kv, gated) {
                    Ok(m) => {
                        println!("    {m}");
                        Ok(Completion::Completed)
                    }
                    Err(m) if m.contains("unsupported op") => Ok(Completion::ignored_with(m)),
                    Err(m) => Err(Failed::from(m)),
                }
            }));
        }
    }
    // the hybrid-state ops (src/parity/state_invariance.rs): invariance::gdn_batch[state]::<device>
    for dev in devices.iter().chain(std::iter::once(&cpu)) {
        let dev = dev.clone();
        trials.push(Trial::ignorable_test(
            format!("invariance::gdn_batch[state]::{}", dev.name()),
            move || match wgllm::parity::state_invariance::check(dev.as_ref()) {
                Ok(m) => {
                    println!("    {m}");
                    Ok(Completion::Completed)
                }
                Err(m) if m.contains("unsupported op") => Ok(Completion::ignored_with(m)),
                Err(m) => Err(Failed::from(m)),
            },
        ));
    }
    trials
}

/// paged_attention's rows in runs that fit its partition scratch (`Tuning::paged_scratch`): with
/// a budget of nothing every row is its own dispatch pair, and the invariance check must still
/// find every composition bit-identical (and near the cpu reference):
/// `invariance::paged_attention[kvf32,row_by_row]::wgpu/llvmpipe`.
fn sliced_invariance(wgpu: &[Arc<WgpuBackend>]) -> Vec<Trial> {
    let mut trials = Vec::new();
    for dev in wgpu {
        let name = dev.name();
        trials.push(Trial::ignorable_test(
            format!("invariance::paged_attention[kvf32,row_by_row]::{name}"),
            move || {
                let devs = WgpuBackend::all_tuned(&|t| t.paged_scratch = 0);
                let d = devs
                    .iter()
                    .find(|d| d.name() == name)
                    .ok_or_else(|| format!("no adapter {name} opened with paged_scratch = 0"))?;
                match wgllm::parity::paged_invariance::check(d, wgllm::dtype::DType::F32, false) {
                    Ok(m) => {
                        println!("    {m}");
                        Ok(Completion::Completed)
                    }
                    Err(m) => Err(Failed::from(m)),
                }
            },
        ));
    }
    trials
}

/// paged_attention's guards (src/parity/paged_guards.rs) per wgpu adapter: rows with a block id
/// past the pool or an inconsistent description come out NaN, their neighbours untouched:
/// `guards::paged_attention::wgpu/llvmpipe`.
fn guards(wgpu: &[Arc<WgpuBackend>]) -> Vec<Trial> {
    let mut trials = Vec::new();
    for d in wgpu {
        let dev = d.clone();
        trials.push(Trial::test(
            format!("guards::paged_attention::{}", dev.name()),
            move || {
                let m = wgllm::parity::paged_guards::check(dev.as_ref())?;
                println!("    {m}");
                Ok(())
            },
        ));
        let dev = d.clone();
        trials.push(Trial::test(
            format!("guards::lone_attention_turns::{}", dev.name()),
            move || {
                let m = wgllm::parity::lone_turns::check_turns(dev.as_ref())?;
                println!("    {m}");
                Ok(())
            },
        ));
    }
    trials
}
