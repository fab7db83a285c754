//! The wgpu backend: WGSL kernels under shaders/, one family per file.
//!
//! Tensors stay on the device. `run` records a dispatch into one open compute pass of one command
//! encoder; `flush` (or a `download`) submits everything recorded so far in one submit, so a whole
//! forward step is one submit. Params go to a uniform arena (one 256-byte slot per dispatch) that is
//! written once per submit.
mod attention;
mod attention_parts;
mod attention_prefill;
#[cfg(test)]
mod attention_sweep;
mod bandwidth;
mod causal_conv1d;
mod context;
mod elementwise;
mod embedding;
mod gated_attention;
mod gdn;
mod gdn_conv_norm;
#[cfg(test)]
mod grid_sync_probe;
pub mod kernel;
mod kv_write;
mod linear;
mod min_p;
mod paged_attention;
mod paged_attention_lone;
mod paged_attention_prefill;
mod paged_gated_split;
mod penalties;
#[cfg(test)]
mod phase_chain_probe;
pub mod portability;
#[cfg(test)]
mod probe_kit;
mod profile;
mod qlayout;
mod quant;
mod reduce;
mod rms_norm;
mod rms_norm_gated;
mod rms_norm_rope;
mod rope;
mod sample;
mod shaders;
mod tuning;

pub use context::{Caps, Readback, WgpuBackend, WgpuStorage};
pub use paged_attention::MAX_GROUP;
pub use tuning::{Checks, MatvecShape, SyncAfter, Tuning};

use super::{refused, unsupported, Backend, Capability, PendingRead, ReadTicket, Support};
use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

impl WgpuBackend {
    /// What `supports` answers, asked anew (`supported` keeps the answers).
    fn support_of(&self, desc: &OpDesc) -> Support {
        if let Support::No(r) = self.common_support(desc) {
            return Support::No(r);
        }
        match &desc.op {
            Op::Embedding | Op::EmbeddingShard { .. } => embedding::supports(self, desc),
            Op::RmsNorm { .. } => rms_norm::supports(self, desc),
            Op::RmsNormRope { .. } | Op::RmsNormRopeKv { .. } => rms_norm_rope::supports(self, desc),
            Op::AddRmsNorm { .. } => rms_norm::supports(self, desc),
            Op::Linear => linear::supports(self, desc),
            Op::SwiGluLinear => linear::supports_swiglu(self, desc),
            Op::LinearSwiGlu => linear::supports_linear_swiglu(self, desc),
            Op::AddRmsNormLinear { .. } | Op::RmsNormLinear { .. } => linear::supports_add_norm(self, desc),
            Op::LinearAdd => linear::supports_linear_add(self, desc),
            Op::LinearAddRmsNorm { .. } => linear::supports_norm_after(self, desc),
            Op::LinearRmsNormRopeKv { .. } => linear::supports_rope_kv_after(self, desc),
            Op::Rope { .. } => rope::supports(self, desc),
            Op::Attention { .. } => attention::supports(self, desc),
            Op::SwiGlu | Op::Add | Op::Copy | Op::Cast => elementwise::supports(self, desc),
            Op::Softmax | Op::Argmax | Op::TopK { .. } => reduce::supports(self, desc),
            Op::CausalConv1d | Op::CausalConv1dUpdate | Op::CausalConv1dBatch => causal_conv1d::supports(self, desc),
            Op::GdnRecurrent | Op::GdnChunked | Op::GdnBatch => gdn::supports(self, desc),
            Op::GdnConvNorm { .. } => gdn_conv_norm::supports(self, desc),
            Op::RmsNormGated { .. } => rms_norm_gated::supports(self, desc),
            Op::GatedAttention { .. } => gated_attention::supports(self, desc),
            Op::KvWrite => kv_write::supports(self, desc),
            Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } => paged_attention::supports(self, desc),
            Op::RmsNormRopeKvAttention { .. } => paged_attention_lone::supports_rope(self, desc),
            Op::Penalties => penalties::supports(self, desc),
            Op::MinP => min_p::supports(self, desc),
            Op::Sample { .. } => sample::supports(self, desc),
        }
    }

    /// The family-independent checks: contract, then each operand's binding size.
    fn common_support(&self, desc: &OpDesc) -> Support {
        if let Err(e) = desc.check() {
            return Support::No(e.to_string());
        }
        for t in desc.inputs.iter().chain(&desc.outputs) {
            // as bound: whole 16-byte units, q8_0 in its device groups (qlayout.rs)
            let bytes = (qlayout::device_bytes(t.dtype, t.numel()) as u64).div_ceil(16) * 16;
            if bytes > self.caps.max_binding {
                return Support::No(format!(
                    "a {bytes} byte operand exceeds max_storage_buffer_binding_size {}",
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
        let mode = self.invariance() as u8;
        self.supported.get_or(desc, mode, || self.support_of(desc))
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
        let _one_op_at_a_time = self.op_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.note_traffic(&desc);
        match op {
            Op::Embedding | Op::EmbeddingShard { .. } => embedding::record(self, op, inputs, outputs),
            Op::RmsNorm { .. } => rms_norm::record(self, op, inputs, outputs),
            Op::RmsNormRope { .. } => rms_norm_rope::record(self, op, inputs, outputs),
            Op::RmsNormRopeKv { .. } => rms_norm_rope::record_kv(self, op, inputs, outputs),
            Op::AddRmsNorm { .. } => rms_norm::record_add(self, op, inputs, outputs),
            Op::Linear
            | Op::SwiGluLinear
            | Op::LinearSwiGlu
            | Op::AddRmsNormLinear { .. }
            | Op::RmsNormLinear { .. }
            | Op::LinearAdd => linear::record(self, op, inputs, outputs),
            Op::LinearAddRmsNorm { .. } => linear::record_norm_after(self, op, inputs, outputs),
            Op::LinearRmsNormRopeKv { .. } => linear::record_rope_kv_after(self, op, inputs, outputs),
            Op::Rope { .. } => rope::record(self, op, inputs, outputs),
            Op::Attention { .. } => attention::record(self, op, inputs, outputs),
            Op::SwiGlu | Op::Add | Op::Copy | Op::Cast => elementwise::record(self, op, inputs, outputs),
            Op::Softmax | Op::Argmax | Op::TopK { .. } => reduce::record(self, op, inputs, outputs),
            Op::CausalConv1d | Op::CausalConv1dUpdate | Op::CausalConv1dBatch => {
                causal_conv1d::record(self, op, inputs, outputs)
            }
            Op::GdnRecurrent | Op::GdnChunked | Op::GdnBatch => gdn::record(self, op, inputs, outputs),
            Op::GdnConvNorm { .. } => gdn_conv_norm::record(self, op, inputs, outputs),
            Op::RmsNormGated { .. } => rms_norm_gated::record(self, op, inputs, outputs),
            Op::GatedAttention { .. } => gated_attention::record(self, op, inputs, outputs),
            Op::KvWrite => kv_write::record(self, op, inputs, outputs),
            Op::PagedAttention { .. } | Op::PagedGatedAttention { .. } => {
                paged_attention::record(self, op, inputs, outputs)
            }
            Op::RmsNormRopeKvAttention { .. } => paged_attention_lone::record_rope(self, op, inputs, outputs),
            Op::Penalties => penalties::record(self, inputs, outputs),
            Op::MinP => min_p::record(self, inputs, outputs),
            Op::Sample { .. } => sample::record(self, op, inputs, outputs),
        }
    }

    fn flush(&self) -> Result<()> {
        self.submit()
    }

    fn sync(&self) -> Result<()> {
        self.wait()
    }

    fn capability(&self, cap: Capability) -> Support {
        match cap {
            Capability::Timestamps if !self.caps.timestamp_query => {
                Support::No("no timestamp queries on this adapter".into())
            }
            _ => Support::Yes,
        }
    }

    fn submit_readback(&self, t: &Tensor) -> Result<PendingRead<'_>> {
        let rb = WgpuBackend::submit_readback(self, t)?;
        Ok(PendingRead::new(move || rb.wait(self)))
    }

    fn start_read(&self, t: &Tensor) -> Result<ReadTicket> {
        let rb = WgpuBackend::submit_readback(self, t)?;
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.reads.lock().unwrap().insert(id, rb);
        Ok(ReadTicket::Pending(id))
    }

    fn finish_read(&self, ticket: ReadTicket) -> Result<Vec<u8>> {
        match ticket {
            ReadTicket::Ready(b) => Ok(b),
            ReadTicket::Pending(id) => {
                let rb = self.reads.lock().unwrap().remove(&id);
                match rb {
                    Some(rb) => rb.wait(self),
                    None => Err(crate::error::Error::Other(format!(
                        "{}: no read-back {id} in flight",
                        self.name
                    ))),
                }
            }
        }
    }

    fn set_batch_invariant(&self, mode: crate::backend::BatchInvariance) {
        self.batch_invariant
            .store(mode as u8, std::sync::atomic::Ordering::Relaxed);
    }

    fn set_profiling(&self, on: bool) -> Result<()> {
        if WgpuBackend::set_profiling(self, on)? {
            Ok(())
        } else {
            Err(refused(self, Capability::Timestamps))
        }
    }

    fn profile(&self) -> Vec<crate::backend::KernelTime> {
        WgpuBackend::profile(self)
    }

    fn read_bandwidth(&self, bytes: usize, iters: usize) -> Result<f64> {
        WgpuBackend::read_bandwidth(self, bytes, iters)
    }

    fn read_bandwidth_sized(&self, bytes: usize, copies: usize, iters: usize) -> Result<f64> {
        WgpuBackend::read_bandwidth_sized(self, bytes, copies, iters)
    }

    fn forget_bind_groups(&self) {
        WgpuBackend::forget_bind_groups(self)
    }

    fn last_submit_dispatches(&self) -> Option<u64> {
        Some(WgpuBackend::last_submit_dispatches(self))
    }
}
