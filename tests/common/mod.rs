//! Helpers shared by test binaries; each binary uses part of them.
#![allow(dead_code)]

pub mod gguf_writer;
pub mod model_copy;
