//! The op seam: every device implements `Backend`.
mod choice;
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
pub use choice::{candidates, default_index, pick_device, DeviceType};

/// One kernel's line of a profile (`Backend::profile`): GPU time and dispatches since profiling
/// was turned on, and the bytes and FLOPs of the ops it ran (`op::traffic`, charged to each op's
/// first kernel; 0 where the host cannot tell).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelTime {
    pub kernel: String,
    pub ns: f64,
    pub dispatches: u64,
    pub bytes: f64,
    pub flops: f64,
}

/// Which kernels keep a row's bits independent of the batch (`Backend::set_batch_invariant`).
/// Both invariant modes fix one order of sums a row for every M; they differ in which family of
/// kernels that order comes from, so a device's results differ between the two (never within one).
/// (The wgpu backend keeps it in an atomic u8: the discriminants are fixed.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum BatchInvariance {
    /// The fastest kernel for each M, whatever its order of sums.
    #[default]
    Off = 0,
    /// Kernels built for few rows at every M (the memory-bound matvec): a step of one or a few
    /// sequences runs as fast as single-stream decode.
    FewRows = 1,
    /// Kernels built for many rows at every M, one row included (tensor-core tiles with one K split
    /// per weight matrix, where the device has them; elsewhere the same kernels as `FewRows`).
    ManyRows = 2,
}

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

    // Capabilities beyond running ops. A device that has one says so in `capability` and overrides
    // its methods; the defaults refuse by name (`refused`), except the cache hint, a no-op.

    /// Yes, or No with the reason, for each capability below.
    fn capability(&self, cap: Capability) -> Support {
        Support::No(cap.default_reason().to_string())
    }
    /// Pipelined decode: submits everything recorded so far plus a copy of `t` (a float or integer
    /// tensor) and returns at once; the device runs on while the host records the next step, and
    /// `PendingRead::wait` collects the bytes.
    fn submit_readback(&self, t: &Tensor) -> Result<PendingRead<'_>> {
        let _ = t;
        Err(refused(self, Capability::PipelinedDecode))
    }
    /// `submit_readback` whose result outlives the borrow of the device: the serving engine keeps
    /// one step's read-back across calls while it records the next. A device without pipelined
    /// decode reads the tensor now and the ticket holds the bytes.
    fn start_read(&self, t: &Tensor) -> Result<ReadTicket> {
        Ok(ReadTicket::Ready(self.download(t)?))
    }
    /// The bytes of a ticket from `start_read` on this device (waits for the copy).
    fn finish_read(&self, ticket: ReadTicket) -> Result<Vec<u8>> {
        match ticket {
            ReadTicket::Ready(b) => Ok(b),
            ReadTicket::Pending(id) => Err(crate::error::Error::Other(format!(
                "{}: read-back {id} was not started on this device",
                self.name()
            ))),
        }
    }
    /// Batch-invariant kernels (see `BatchInvariance`): an op then gives a row the same bits
    /// whatever else is in the batch (the serving engine turns it on); off, a device may take
    /// faster kernels whose order of sums depends on the batch's size (the wgpu cooperative-matrix
    /// GEMM for a large M). A device whose kernels are always batch-invariant ignores it.
    fn set_batch_invariant(&self, mode: BatchInvariance) {
        let _ = mode;
    }
    /// GPU timestamp profiling on or off (turning it off always succeeds).
    fn set_profiling(&self, on: bool) -> Result<()> {
        if on {
            return Err(refused(self, Capability::Timestamps));
        }
        Ok(())
    }
    /// Device time per kernel entry point since profiling was turned on: (entry, total ns,
    /// dispatches). Empty without profiling.
    fn profile(&self) -> Vec<KernelTime> {
        Vec::new()
    }
    /// The read-bandwidth probe: bytes per second the device reads from its memory (`bytes` read
    /// `iters` times, the fastest sweep).
    fn read_bandwidth(&self, bytes: usize, iters: usize) -> Result<f64> {
        let _ = (bytes, iters);
        Err(refused(self, Capability::BandwidthProbe))
    }
    /// The probe's kernels over `copies` buffers of `bytes` each, `iters` dispatches back to back:
    /// the bandwidth a plain read of an op's bytes gets at that size.
    fn read_bandwidth_sized(&self, bytes: usize, copies: usize, iters: usize) -> Result<f64> {
        let _ = (bytes, copies, iters);
        Err(refused(self, Capability::BandwidthProbe))
    }
    /// Drops cached per-dispatch state that keeps freed tensors' memory alive (a hint: call after
    /// dropping big tensors; a device without such a cache ignores it).
    fn forget_bind_groups(&self) {}
    /// Dispatches the most recent submit carried; None where the device does not submit work in
    /// batches.
    fn last_submit_dispatches(&self) -> Option<u64> {
        None
    }
}

/// What a device may offer beyond running ops (see `Backend::capability`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// `submit_readback`: the device queues work behind the host (`run` records, a submit runs
    /// it) and reads a tensor back asynchronously, so the host records step i+1 while the device
    /// runs step i
    PipelinedDecode,
    /// `set_profiling`, `profile`: device time per kernel from timestamp queries
    Timestamps,
    /// `read_bandwidth`, `read_bandwidth_sized`
    BandwidthProbe,
}

impl Capability {
    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Capability::PipelinedDecode => "pipelined decode",
            Capability::Timestamps => "GPU timestamp profiling",
            Capability::BandwidthProbe => "read-bandwidth probe",
        }
    }
    /// Why a device that says nothing about it lacks it.
    fn default_reason(self) -> &'static str {
        match self {
            Capability::PipelinedDecode => "no asynchronous read-back: the device does not queue work behind the host",
            Capability::Timestamps => "no device timestamps on this backend",
            Capability::BandwidthProbe => "no read-bandwidth probe on this backend",
        }
    }
}

/// The refusal of `cap` on `dev`, with the reason `capability` gives: `pipelined decode: not
/// supported on cpu (...)`.
pub fn refused(dev: &(impl Backend + ?Sized), cap: Capability) -> crate::error::Error {
    let why = match dev.capability(cap) {
        Support::No(why) => why,
        Support::Yes => "refused by the device".to_string(),
    };
    crate::error::Error::Other(format!("{}: not supported on {} ({why})", cap.name(), dev.name()))
}

/// A read-back in flight (`Backend::submit_readback`): `wait` blocks until the device reaches the
/// copy and returns the tensor's bytes.
pub struct PendingRead<'a> {
    wait: Box<dyn FnOnce() -> Result<Vec<u8>> + 'a>,
}

impl<'a> PendingRead<'a> {
    pub fn new(wait: impl FnOnce() -> Result<Vec<u8>> + 'a) -> Self {
        PendingRead { wait: Box::new(wait) }
    }
    pub fn wait(self) -> Result<Vec<u8>> {
        (self.wait)()
    }
}

/// A read-back from `Backend::start_read`: the bytes already, or the device's handle of a copy in
/// flight (redeemed once, with `Backend::finish_read` on the same device).
#[derive(Debug)]
pub enum ReadTicket {
    Ready(Vec<u8>),
    Pending(u64),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_without_a_capability_refuses_it_by_name() {
        let cpu = cpu::CpuBackend::new();
        let t = cpu.alloc(DType::U32, &[1]).unwrap();
        for (cap, err) in [
            (Capability::PipelinedDecode, cpu.submit_readback(&t).err()),
            (Capability::Timestamps, cpu.set_profiling(true).err()),
            (Capability::BandwidthProbe, cpu.read_bandwidth(1 << 20, 1).err()),
            (
                Capability::BandwidthProbe,
                cpu.read_bandwidth_sized(1 << 20, 1, 1).err(),
            ),
        ] {
            assert!(!cpu.capability(cap).is_yes());
            let msg = err.expect("refused").to_string();
            assert!(
                msg.starts_with(&format!("{}: not supported on cpu (", cap.name())),
                "{msg}"
            );
        }
        cpu.set_profiling(false).unwrap();
        cpu.forget_bind_groups();
        assert!(cpu.profile().is_empty() && cpu.last_submit_dispatches().is_none());
    }
}
