//! wgllm: LLM inference on any GPU. WGSL kernels through wgpu, a CPU reference for every op, and a
//! cross-device harness that compares them. See ARCHITECTURE.md.
//!
//! # Embedding wgllm
//!
//! What a program needs is at the crate root:
//! - devices: [`pick_device`] (`None`: the fastest GPU, else the cpu backend; or `cpu`, `wgpu`,
//!   `wgpu:NAME`) gives a [`Backend`];
//! - models: [`Engine::load`] reads a Hugging Face directory (config.json, safetensors,
//!   tokenizer.json) or a GGUF file onto it; [`default_model_dir`] is the embedded tiny model;
//! - text: the model's [`Tokenizer`], its chat template through [`Conversation`] /
//!   [`ChatMessage`], and [`StreamDecoder`] for text that streams without splitting a character;
//! - generation: [`Engine::generate`] with a [`Sampler`] built from [`Sampling`], one [`Step`] per
//!   token;
//! - errors: [`Error`], [`Result`].
//!
//! `examples/generate.rs` puts them together. The modules themselves (ops, backends, kernels, the
//! parity harness, the command line) are public so the tests, benches and the `wgllm` binary can
//! reach them; they are hidden from these docs and carry no stability promise (their comments use
//! shapes such as `[T, D]` freely, hence the allowed broken links).
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod backend;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod cli;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod dtype;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod engine;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod error;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod model;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod op;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod parity;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod quant;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod serve;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod server;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod tensor;
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod util;

pub use backend::{pick_device, Backend};
pub use engine::chat::Conversation;
pub use engine::sampler::{Sampler, Sampling};
pub use engine::{Engine, Step};
pub use error::{Error, Result};
pub use model::default::dir as default_model_dir;
pub use model::stream::StreamDecoder;
pub use model::tokenizer::{ChatMessage, ChatOptions, Tokenizer};

#[doc(hidden)]
pub use backend::Support;
#[doc(hidden)]
pub use dtype::DType;
#[doc(hidden)]
pub use op::{Op, OpDesc, TensorDesc};
#[doc(hidden)]
pub use tensor::Tensor;
