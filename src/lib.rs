//! wgllm: LLM inference on any GPU. WGSL kernels through wgpu, a CPU reference for every op, and a
//! cross-device harness that compares them. See ARCHITECTURE.md.
pub mod backend;
pub mod cli;
pub mod dtype;
pub mod engine;
pub mod error;
pub mod model;
pub mod op;
pub mod parity;
pub mod quant;
pub mod serve;
pub mod tensor;
pub mod util;

pub use backend::{Backend, Support};
pub use dtype::DType;
pub use error::{Error, Result};
pub use op::{Op, OpDesc, TensorDesc};
pub use tensor::Tensor;
