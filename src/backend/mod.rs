//! The op seam: every device implements `Backend`.
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "hip")]
pub mod hip;
#[cfg(any(feature = "cuda", feature = "hip"))]
pub mod native;
pub mod wgpu;

use crate::dtype::DType;
use crate::error::Result;
use crate::op::{Op, OpDesc};
use crate::tensor::Tensor;

/// A device's answer to "can you run this?".
#[derive(Clone, Debug, PartialEq)]
pub enum Support {
    Yes,
    No(String),
}

impl Support {
    pub fn is_yes(&self) -> bool {
        matches!(self, Support::Yes)
    }
}

pub trait Backend: Send + Sync {
    /// `cpu`, `wgpu/llvmpipe`, `wgpu/nvidia-h200` ...
    fn name(&self) -> String;
    /// Yes, or No with the reason (missing kernel, missing feature, a binding over the size limit).
    fn supports(&self, desc: &OpDesc) -> Support;
    fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<Tensor>;
    /// Writes `bytes` (exactly `t.nbytes()`) into the tensor's region.
    fn upload(&self, t: &Tensor, bytes: &[u8]) -> Result<()>;
    /// Reads the tensor's region back (waits for pending work).
    fn download(&self, t: &Tensor) -> Result<Vec<u8>>;
    /// Records (or runs) one op. Refuses by name with `Error::Unsupported` when `supports` says no.
    fn run(&self, op: &Op, inputs: &[&Tensor], outputs: &[&Tensor]) -> Result<()>;
    /// Submits recorded work. Work is also flushed by `download`.
    fn flush(&self) -> Result<()>;
    /// Submits and waits until the device is idle (timing).
    fn sync(&self) -> Result<()> {
        self.flush()
    }
    /// The wgpu backend behind this device, for wgpu-only tools (bandwidth probe, profiling).
    fn as_wgpu(&self) -> Option<&wgpu::WgpuBackend> {
        None
    }
}

/// The refusal error for `desc` on `device`.
pub fn unsupported(desc: &OpDesc, device: &str, reason: &str) -> crate::error::Error {
    crate::error::Error::Unsupported {
        op: desc.label(),
        device: device.to_string(),
        reason: reason.to_string(),
    }
}

/// Every backend this machine can offer: the CPU reference first, then each wgpu adapter, then
/// the native devices of the backends this build has (features `cuda`, `hip`).
pub fn all_devices() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(cpu::CpuBackend::new())];
    for b in wgpu::WgpuBackend::all() {
        v.push(Box::new(b));
    }
    for (b, _) in native_devices() {
        v.push(b);
    }
    v
}

/// The native devices (hip/ kernels through `cuda` or `hip`), each with a one-line description.
pub fn native_devices() -> Vec<(Box<dyn Backend>, String)> {
    #[allow(unused_mut)]
    let mut v: Vec<(Box<dyn Backend>, String)> = Vec::new();
    #[cfg(feature = "cuda")]
    for r in cuda::probe().unwrap_or_default() {
        let d = r.description.clone();
        v.push((Box::new(native::NativeBackend::new(r)), d));
    }
    #[cfg(feature = "hip")]
    for r in hip::probe().unwrap_or_default() {
        let d = r.description.clone();
        v.push((Box::new(native::NativeBackend::new(r)), d));
    }
    v
}

/// Backends this build has that have no device here, with the reason: `("hip", "no ROCm runtime
/// (...)")`. Their cases are reported as skipped with that reason, never as passed.
pub fn absent_backends() -> Vec<(String, String)> {
    #[allow(unused_mut)]
    let mut v: Vec<(String, String)> = Vec::new();
    #[cfg(feature = "cuda")]
    if let Some(r) = cuda::absent_reason() {
        v.push(("cuda".to_string(), r));
    }
    #[cfg(feature = "hip")]
    if let Some(r) = hip::absent_reason() {
        v.push(("hip".to_string(), r));
    }
    v
}

/// Devices matching `spec`: `cpu`, `gpu` (every non-CPU device), `wgpu` (every wgpu adapter),
/// `wgpu:NAME` (adapter whose name contains NAME, case-insensitive).
pub fn select_devices(spec: &str) -> Result<Vec<Box<dyn Backend>>> {
    let spec_l = spec.to_ascii_lowercase();
    let all = all_devices();
    let names: Vec<String> = all.iter().map(|d| d.name()).collect();
    let picked: Vec<Box<dyn Backend>> = all
        .into_iter()
        .filter(|d| {
            let n = d.name().to_ascii_lowercase();
            match spec_l.as_str() {
                "gpu" => n != "cpu",
                "cpu" | "wgpu" => n == spec_l || n.starts_with(&format!("{spec_l}/")),
                s => {
                    let (fam, want) = s.split_once([':', '/']).unwrap_or((s, ""));
                    n.starts_with(&format!("{fam}/")) && n.contains(want)
                }
            }
        })
        .collect();
    if picked.is_empty() && spec_l != "gpu" {
        let fam = spec_l.split([':', '/']).next().unwrap_or("");
        if let Some((b, why)) = absent_backends().into_iter().find(|(b, _)| b == fam) {
            return Err(crate::error::Error::NoDevice(format!(
                "`{spec}`: the {b} backend is absent here: {why}"
            )));
        }
        return Err(crate::error::Error::NoDevice(format!(
            "`{spec}` matches none of: {}",
            names.join(", ")
        )));
    }
    Ok(picked)
}
