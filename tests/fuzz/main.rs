//! Fuzz targets for every loader (issue 21), as a normal test target: `cargo test --release --test
//! fuzz` runs each for a few seconds from a fixed seed (CI: `.ci/run`'s `cargo test` includes it).
//! The long local run, one target after another with its figures printed:
//!
//! ```text
//! WGLLM_FUZZ_SECS=3600 cargo test --release --test fuzz -- --test-threads=1 --nocapture
//! ```
//!
//! (WGLLM_FUZZ_EXECS=N stops each target after N executions instead; WGLLM_FUZZ_SEED picks another
//! sequence; a crash's input is written to target/fuzz-crashes/<target>/.) The seed corpus is read
//! from goldens/ and tests/fixtures (small files only) each run; inputs that load are kept as
//! further bases in memory. harness.rs: the loop, the allocation cap, why in-process on stable.
#[path = "../common/mod.rs"]
mod common;
mod harness;
mod mutate;
mod targets;

#[global_allocator]
static ALLOC: harness::Counting = harness::Counting;
