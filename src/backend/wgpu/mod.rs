//! The wgpu backend: WGSL kernels under shaders/, one family per file.
//!
//! Tensors stay on the device. `run` records a dispatch into one open compute pass of one command
//! encoder; `flush` (or a `download`) submits everything recorded so far in one submit, so a whole
//! forward step is one submit. Params go to a uniform arena (one 256-byte slot per dispatch) that is
//! written once per submit.
mod attention;
mod bandwidth;
mod context;
mod elementwise;
mod embed;
pub mod kernel;
mod linear;
mod norm;
mod norm_rope;
mod profile;
mod reduce;
mod rope;

pub use context::{Caps, Readback, WgpuBackend, WgpuStorage};

use super::{unsupported, Backend, Support};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

impl WgpuBackend {
    /// The family-independent checks: contract, then each operand's binding size.
    fn common_support(&self, desc: &OpDesc) -> Support {
        if let Err(e) = desc.check() {
            return Support::No(e.to_string());
        }
        for t in desc.inputs.iter().chain(&desc.outputs) {
            if t.nbytes() as u64 > self.caps.max_binding {
                return Support::No(format!(
                    "a {} byte operand exceeds max_storage_buffer_binding_size {}",
                    t.nbytes(),
                    self.caps.max_binding
                ));
            }
        }
        Support::Yes
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn supports(&self, desc: &OpDesc) -> Support {
        if let Support::No(r) = self.common_support(desc) {
            return Support::No(r);
        }
        match &desc.op {
            Op::Embedding => embed::supports(self, desc),
            Op::RmsNorm { .. } => norm::supports(self, desc),
            Op::RmsNormRope { .. } => norm_rope::supports(self, desc),
            Op::AddRmsNorm { .. } => norm::supports(self, desc),
            Op::Linear => linear::supports(self, desc),
            Op::Rope { .. } => rope::supports(self, desc),
            Op::Attention { .. } => attention::supports(self, desc),
            Op::SwiGlu | Op::Add | Op::Copy | Op::Cast => elementwise::supports(self, desc),
            Op::Softmax | Op::Argmax | Op::TopK { .. } => reduce::supports(self, desc),
        }
    }

    fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        self.alloc_tensor(dtype, shape)
    }

    fn upload(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
        self.upload_bytes(t, bytes)
    }

    fn download(&self, t: &Tensor) -> Result<Vec<u8>> {
        self.download_bytes(t)
    }

    fn run(&self, op: &Op, inputs: &[&Tensor], outputs: &[&Tensor]) -> Result<()> {
        let desc = OpDesc::of(op, inputs, outputs);
        if let Support::No(r) = self.supports(&desc) {
            return Err(unsupported(&desc, &self.name, &r));
        }
        for t in inputs.iter().chain(outputs) {
            self.storage(t)?;
        }
        match op {
            Op::Embedding => embed::record(self, op, inputs, outputs),
            Op::RmsNorm { .. } => norm::record(self, op, inputs, outputs),
            Op::RmsNormRope { .. } => norm_rope::record(self, op, inputs, outputs),
            Op::AddRmsNorm { .. } => norm::record_add(self, op, inputs, outputs),
            Op::Linear => linear::record(self, op, inputs, outputs),
            Op::Rope { .. } => rope::record(self, op, inputs, outputs),
            Op::Attention { .. } => attention::record(self, op, inputs, outputs),
            Op::SwiGlu | Op::Add | Op::Copy | Op::Cast => elementwise::record(self, op, inputs, outputs),
            Op::Softmax | Op::Argmax | Op::TopK { .. } => reduce::record(self, op, inputs, outputs),
        }
    }

    fn flush(&self) -> Result<()> {
        self.submit()
    }

    fn sync(&self) -> Result<()> {
        self.wait()
    }

    fn as_wgpu(&self) -> Option<&WgpuBackend> {
        Some(self)
    }
}
