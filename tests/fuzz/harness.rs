//! The in-process fuzz loop. Each execution runs under `catch_unwind` (a panic that reaches here
//! is a crash), under an allocation cap (a counting global allocator: an execution whose live
//! allocations on its thread would pass ALLOC_CAP is an out-of-memory crash), and is timed (one
//! slower than the per-execution limit is a timeout). Crashing and slow inputs are written to
//! target/fuzz-crashes/<target>/ and fail the test.
//!
//! Why in-process on stable rather than cargo-fuzz: cargo-fuzz needs a nightly toolchain and
//! libFuzzer's sanitizer instrumentation, which this project's CI (stable Rust, `.ci/run`) and
//! its machines do not reliably have; a stable harness runs inside `cargo test`, so every CI run
//! fuzzes every target. The cost: no coverage feedback (the mutator is blind, so inputs that load
//! are kept as further bases instead), and a slow execution is measured, not interrupted (a thread
//! cannot be stopped from outside).
use crate::mutate::Mutator;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The live bytes one execution may hold on its thread: 1 GiB.
pub const ALLOC_CAP: usize = 1 << 30;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static TARGET: Cell<&'static str> = const { Cell::new("") };
    static INPUT: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// The system allocator, counting each armed thread's live bytes.
pub struct Counting;

/// Charges `n` bytes to this thread; false (after saving the input) when an armed execution
/// would pass the cap: the allocation then fails and the process aborts, reported as an OOM.
fn charge(n: usize) -> bool {
    let Ok(armed) = ARMED.try_with(|a| a.get()) else {
        return true;
    };
    let live = LIVE.with(|l| {
        let v = l.get().saturating_add(n);
        l.set(v);
        v
    });
    if armed && live > ALLOC_CAP {
        ARMED.with(|a| a.set(false)); // what follows allocates
        let target = TARGET.with(|t| t.get());
        let (p, len) = INPUT.with(|i| i.get());
        // SAFETY: the pointer and length are the running execution's input, alive until it returns
        let input = unsafe { std::slice::from_raw_parts(p, len) };
        let path = save(target, "oom", input);
        // straight to the stream: libtest's capture of eprintln! is lost when the process aborts
        let msg = format!(
            "fuzz {target}: an execution would hold {live} bytes, past the cap of {ALLOC_CAP}: out of memory \
             (a crash); its input is {}\n",
            path.display()
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
        return false;
    }
    true
}

fn credit(n: usize) {
    let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(n)));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !charge(l.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !charge(l.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        credit(l.size());
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            if !charge(new - l.size()) {
                return std::ptr::null_mut();
            }
        } else {
            credit(l.size() - new);
        }
        System.realloc(p, l, new)
    }
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Writes a crashing input under target/fuzz-crashes/<target>/ and returns the path.
fn save(target: &str, kind: &str, input: &[u8]) -> PathBuf {
    let h = fnv(input);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/fuzz-crashes")
        .join(target);
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{kind}-{h:016x}.bin"));
    let _ = std::fs::write(&p, input);
    p
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Panics are recorded, not printed: the library catches some inside the tokenizers crate on
/// purpose (tokenizer_check.rs), and a crash is reported with its message by the loop below.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = format!("{info}");
            let _ = LAST_PANIC.try_with(|p| *p.borrow_mut() = msg);
        }))
    });
}

/// What one target's run did.
#[derive(Debug, Default)]
pub struct Report {
    pub execs: u64,
    pub accepted: u64,
    pub crashes: Vec<String>,
    pub timeouts: Vec<String>,
}

/// Fuzzes `run` (true: the input was accepted) from `seeds` for WGLLM_FUZZ_SECS seconds (default
/// 4) or WGLLM_FUZZ_EXECS executions, whichever ends first, from WGLLM_FUZZ_SEED (default 21, so
/// a CI run is the same every time up to where its time ends). WGLLM_FUZZ_EXEC_MS (default 2000)
/// is the per-execution limit. Fails on any crash or timeout.
pub fn fuzz(target: &'static str, seeds: Vec<Vec<u8>>, run: impl Fn(&[u8]) -> bool) {
    quiet_panics();
    assert!(!seeds.is_empty(), "{target}: no seeds");
    let budget = Duration::from_secs(env_u64("WGLLM_FUZZ_SECS", 4));
    let max_execs = env_u64("WGLLM_FUZZ_EXECS", u64::MAX);
    let limit = Duration::from_millis(env_u64("WGLLM_FUZZ_EXEC_MS", 2000));
    let seed = env_u64("WGLLM_FUZZ_SEED", 21) ^ wgllm::util::seed(target);
    let mut m = Mutator::new(seed);
    let mut corpus = seeds.clone();
    let n_seeds = corpus.len();
    let mut seen = std::collections::HashSet::new();
    let mut rep = Report::default();
    let t0 = Instant::now();
    let mut i = 0usize;
    while t0.elapsed() < budget && rep.execs < max_execs {
        // every seed once as it is, then mutations of the corpus
        let input = if i < n_seeds {
            corpus[i].clone()
        } else {
            let a = m.below(corpus.len());
            let b = m.below(corpus.len());
            m.mutate(&corpus[a], &corpus[b])
        };
        i += 1;
        TARGET.with(|t| t.set(target));
        INPUT.with(|c| c.set((input.as_ptr(), input.len())));
        LIVE.with(|l| l.set(0));
        ARMED.with(|a| a.set(true));
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| run(&input)));
        let took = t.elapsed();
        ARMED.with(|a| a.set(false));
        rep.execs += 1;
        match r {
            Err(_) => {
                let msg = LAST_PANIC.with(|p| p.borrow().clone());
                let p = save(target, "crash", &input);
                eprintln!("fuzz {target}: CRASH (panic: {msg}); input {}", p.display());
                rep.crashes.push(msg);
            }
            Ok(ok) => {
                rep.accepted += ok as u64;
                // inputs that load are kept as further bases (no coverage feedback: see above)
                if ok && i > n_seeds && corpus.len() < 256 && seen.insert(fnv(&input)) {
                    corpus.push(input.clone());
                }
            }
        }
        if took > limit {
            let p = save(target, "timeout", &input);
            eprintln!("fuzz {target}: TIMEOUT ({took:?} > {limit:?}); input {}", p.display());
            rep.timeouts.push(format!("{took:?}"));
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "fuzz {target}: {} executions in {secs:.1}s ({:.0}/s), {} accepted, {} crashes, {} timeouts, 0 out-of-memory, corpus {} ({} seeds)",
        rep.execs,
        rep.execs as f64 / secs,
        rep.accepted,
        rep.crashes.len(),
        rep.timeouts.len(),
        corpus.len(),
        n_seeds
    );
    assert!(
        rep.crashes.is_empty() && rep.timeouts.is_empty(),
        "fuzz {target}: {} crashes, {} timeouts (inputs under target/fuzz-crashes/{target}/)",
        rep.crashes.len(),
        rep.timeouts.len()
    );
}
