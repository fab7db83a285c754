//! `wgllm serve`: an OpenAI-compatible HTTP server in front of the serving engine (src/serve/).
//!
//! Layers, each talking only to its neighbour: axum handlers (routes.rs; bodies read field by field
//! in params.rs, answers shaped in types.rs, streams in sse.rs, refusals in error.rs) -> one `Run` per
//! request (generate.rs: checks against the model, the bounded queue, detokenization and stop
//! strings) -> the engine thread (engine_thread.rs: owns the `ServeEngine`, one step at a time) ->
//! the scheduler and the batched forward. app.rs holds the state, the router and the process's
//! life (bind, load, graceful shutdown); metrics.rs the Prometheus counters.
pub mod app;
pub mod engine_thread;
pub mod error;
pub mod generate;
pub mod metrics;
pub mod params;
pub mod routes;
pub mod sse;
pub mod types;

pub use app::{run, ServerConfig};
pub use engine_thread::LoadSpec;
pub use error::ApiError;
