//! The wgpu device of one adapter: its capabilities, tuning and sources, and its tensors'
//! storage. The rest of the device, by what it does: opening adapters (adapter.rs), buffers and
//! their transfers (buffers.rs), compiling kernels (pipelines.rs), recording and submitting
//! dispatches (recorder.rs).
mod adapter;
mod buffers;
mod pipelines;
#[cfg(test)]
pub(crate) use pipelines::kernel_source_with;
mod recorder;
mod supported;

pub use recorder::Readback;

use super::kernel::KernelKey;
use super::shaders::Sources;
use super::tuning::Tuning;
use crate::error::{Error, Result};
use crate::tensor::{Storage, Tensor};
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the adapter offers that kernels care about.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Caps {
    pub shader_f16: bool,
    pub subgroup: bool,
    pub subgroup_min: u32,
    pub subgroup_max: u32,
    pub timestamp_query: bool,
    pub cooperative_matrix: bool,
    /// The cooperative matrices' size (16 or 8: f16 T x T x T products, f32 sums); 0 without them.
    pub coop_tile: u32,
    pub max_binding: u64,
    pub max_buffer: u64,
    pub max_workgroup_storage: u32,
    pub max_invocations: u32,
    /// Storage buffers one kernel may bind (a kernel with more tensors is refused by name).
    pub max_storage_buffers: u32,
}

pub struct WgpuStorage {
    pub buffer: wgpu::Buffer,
    /// Unique per allocation (never reused), so cached bind groups can key on it safely.
    pub id: u64,
}

impl Storage for WgpuStorage {
    fn capacity_bytes(&self) -> usize {
        self.buffer.size() as usize
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct WgpuBackend {
    pub(crate) name: String,
    pub info: wgpu::AdapterInfo,
    pub caps: Caps,
    /// How kernels are built and recorded here, fixed when the adapter opened.
    pub tuning: Tuning,
    /// The WGSL this device compiles (embedded, or read from `tuning.shader_dir` at open).
    sources: Sources,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    arena: wgpu::Buffer,
    pipelines: Mutex<rustc_hash::FxHashMap<KernelKey, Arc<pipelines::Pipeline>>>,
    /// Bind groups by (pipeline, tensor buffer ids); the params slot is a dynamic offset, so a
    /// decode step that reuses its buffers creates no bind groups after the first step. A pipeline
    /// is named by its address: the cache above keeps every one for the device's life.
    bind_groups: Mutex<rustc_hash::FxHashMap<(usize, Vec<u64>), wgpu::BindGroup>>,
    /// `Backend::supports`' answers by what they depend on (supported.rs).
    pub(crate) supported: supported::Supported,
    pub(crate) next_id: std::sync::atomic::AtomicU64,
    /// read-backs in flight by ticket (`Backend::start_read`)
    pub(crate) reads: Mutex<HashMap<u64, recorder::Readback>>,
    /// Internal scratch buffers by name (e.g. argmax partials), grown on demand.
    scratch: Mutex<HashMap<&'static str, Tensor>>,
    rec: Mutex<recorder::Recorder>,
    /// Held while one op records its dispatches: an op of several dispatches that pass data through
    /// a scratch buffer (argmax partials, the gated delta rule's chunk prep) is never interleaved
    /// with another thread's op on the same device.
    pub(crate) op_lock: Mutex<()>,
    errors: Arc<Mutex<Vec<String>>>,
    /// Dispatches recorded since creation (for tests and benchmarks).
    pub dispatches: std::sync::atomic::AtomicU64,
    /// Dispatches in the most recent submit.
    last_submit: std::sync::atomic::AtomicU64,
    /// `Backend::set_batch_invariant` (`BatchInvariance` as u8): which family of linear kernels
    /// serves every M (linear/ `plan`).
    pub(crate) batch_invariant: std::sync::atomic::AtomicU8,
}

/// How a lost device is reported in the error sink (and recognized by `device_error`).
pub(crate) const LOST: &str = "device lost";

impl WgpuBackend {
    fn device_error(&self, call: &str, detail: String) -> Error {
        let hint = if detail.contains(LOST) {
            "; the driver has dropped the GPU (a hang, a timeout or a reset): restart the process; to \
             find the kernel, run with WGLLM_SYNC=all; to go on without this GPU, pass --device cpu"
        } else if call.starts_with("compile kernel") {
            "; this adapter's compiler refused one of wgllm's kernels: try another device (`wgllm \
             devices`; --device cpu always works), or WGLLM_SHADER_CHECKS=1, and report the adapter \
             and this message"
        } else {
            ""
        };
        Error::Device {
            device: self.name.clone(),
            call: call.into(),
            detail: format!("{detail}{hint}"),
        }
    }

    /// Errors the device reported asynchronously since the last check (a lost device among them,
    /// from the device-lost callback: `LOST` then the driver's reason).
    fn take_errors(&self, call: &str) -> Result<()> {
        let mut e = self.errors.lock().unwrap();
        if e.is_empty() {
            return Ok(());
        }
        let msg = e.join("; ");
        e.clear();
        Err(self.device_error(call, msg))
    }

    pub(crate) fn storage<'a>(&self, t: &'a Tensor) -> Result<&'a WgpuStorage> {
        match t.storage.as_any().downcast_ref::<WgpuStorage>() {
            Some(s) if *t.device == *self.name => Ok(s),
            _ => Err(Error::Other(format!("tensor on {} used on {}", t.device, self.name))),
        }
    }

    /// The text of shaders/`name` this device compiles (shaders.rs).
    /// The batch invariance the backend is set to (`Backend::set_batch_invariant`).
    pub(crate) fn invariance(&self) -> crate::backend::BatchInvariance {
        use crate::backend::BatchInvariance;
        match self.batch_invariant.load(std::sync::atomic::Ordering::Relaxed) {
            x if x == BatchInvariance::FewRows as u8 => BatchInvariance::FewRows,
            x if x == BatchInvariance::ManyRows as u8 => BatchInvariance::ManyRows,
            _ => BatchInvariance::Off,
        }
    }

    pub(crate) fn source(&self, name: &str) -> &str {
        self.sources.get(name)
    }

    /// Which source set `source` reads: 0 the embedded one (for caches of generated bodies).
    pub(crate) fn sources_id(&self) -> u64 {
        self.sources.id()
    }
}
