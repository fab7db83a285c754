//! The native module's host side, shared by the `cuda` and `hip` backends.
//!
//! Both run the same HIP C++ kernels under hip/: `hip` compiles them with hiprtc for the device's
//! gfx arch, `cuda` with NVRTC after the compat prelude hip/cuda_prelude.h. What differs between
//! the two is only the runtime API's calls (a [`device::Driver`] and its [`device::Rtc`]); the
//! [`Runtime`] over them ([`device::Device`]: caches, compiling with the disk cache, checked calls
//! naming the call), which kernel runs an op, its grid and arguments, and what is refused and why
//! ([`plan`]) live here once.
//!
//! Device memory is device-only (no managed memory, no host fallback): an op the kernels do not
//! cover is refused by name in `supports`, and `run` refuses it with `Error::Unsupported`.
pub mod device;
#[cfg(all(test, feature = "cuda"))]
mod emu;
pub mod plan;
pub mod profile;
pub mod queue;
pub mod source;

use super::{unsupported, Backend, Capability, PendingRead, ReadTicket, Support};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::{Op, OpDesc};
use crate::tensor::{Storage, Tensor};
use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// One kernel argument, passed by value.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// a device address (a tensor's first element)
    Ptr(u64),
    U32(u32),
    U64(u64),
    F32(f32),
}

/// A compiled kernel function, as the runtime's opaque handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Func(pub u64);

/// Loaded functions by module and entry (looked up on every launch without allocating).
#[derive(Default)]
pub struct FuncCache(Mutex<HashMap<ModuleKey, HashMap<&'static str, Func>>>);

impl FuncCache {
    /// The function `entry` of `m`, loaded by `load` the first time.
    pub fn get_or_load(&self, m: &ModuleKey, entry: &'static str, load: impl FnOnce() -> Result<Func>) -> Result<Func> {
        if let Some(f) = self.0.lock().unwrap().get(m).and_then(|e| e.get(entry)) {
            return Ok(*f);
        }
        let f = load()?;
        self.0.lock().unwrap().entry(m.clone()).or_default().insert(entry, f);
        Ok(f)
    }
}

/// Calls `f` with the kernel parameter array of `args`: each argument in its own 8-byte slot,
/// the array pointing at each slot. Little endian: a slot's address is also the address of a u32
/// or f32 argument, so `cuLaunchKernel` / `hipModuleLaunchKernel` read each at its size.
pub fn with_params<T>(args: &[Arg], f: impl FnOnce(&mut [*mut c_void]) -> T) -> T {
    let mut slots: Vec<u64> = args
        .iter()
        .map(|a| match *a {
            Arg::Ptr(p) | Arg::U64(p) => p,
            Arg::U32(x) => x as u64,
            Arg::F32(x) => x.to_bits() as u64,
        })
        .collect();
    let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
    f(&mut ptrs)
}

/// `rms_norm (rms_norm.hip[T_X=wg_bf16,...], grid 5x1)`, for errors.
pub fn launch_label(l: &plan::Launch) -> String {
    format!("{} ({}, grid {}x{})", l.entry, l.module.label(), l.grid.0, l.grid.1)
}

/// One module to compile: a hip/ source file with its dtype substitutions (`T_X` -> `wg_bf16` ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleKey {
    pub file: &'static str,
    pub defines: Vec<(&'static str, &'static str)>,
}

impl ModuleKey {
    /// `rms_norm.hip[T_X=wg_bf16,T_W=float]`, for messages.
    pub fn label(&self) -> String {
        let d: Vec<String> = self.defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}[{}]", self.file, d.join(","))
    }
}

/// What a device runtime (CUDA driver + NVRTC, or HIP + hiprtc) provides.
pub trait Runtime: Send + Sync + 'static {
    /// `cuda/nvidia-h200`, `hip/amd-radeon-rx-7900-xtx`
    fn name(&self) -> &str;
    /// Lanes per wave (NVIDIA warp 32; RDNA 32; CDNA 64).
    fn wave(&self) -> u32;
    fn alloc(&self, bytes: usize) -> Result<u64>;
    fn free(&self, ptr: u64);
    fn upload(&self, ptr: u64, bytes: &[u8]) -> Result<()>;
    fn download(&self, ptr: u64, out: &mut [u8]) -> Result<()>;
    /// The kernel `entry` of `module`, compiled (or taken from the disk cache) and loaded once.
    fn function(&self, module: &ModuleKey, entry: &'static str) -> Result<Func>;
    /// Launches `f` (the function of `l`) over `l.grid` blocks of WG_BLOCK threads with `l.args`
    /// (queued; ordered with uploads and downloads).
    fn launch(&self, f: Func, l: &plan::Launch) -> Result<()>;
    /// Waits until the device is idle.
    fn sync(&self) -> Result<()>;
    /// Starts what `launch` queued (a runtime that launches at once has nothing to do).
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    /// Starts a copy of `bytes` at `ptr` to the host; the bytes at once where the runtime has no
    /// asynchronous copy.
    fn read_start(&self, ptr: u64, bytes: usize) -> Result<ReadTicket> {
        let mut out = vec![0u8; bytes];
        self.download(ptr, &mut out)?;
        Ok(ReadTicket::Ready(out))
    }
    /// The bytes of a `read_start` ticket (waits for its copy only).
    fn read_finish(&self, ticket: u64) -> Result<Vec<u8>> {
        Err(Error::Other(format!(
            "{}: no read-back {ticket} in flight",
            self.name()
        )))
    }
    /// Graph and launch counts (zero where launches are not queued).
    fn queue_stats(&self) -> queue::QueueStats {
        queue::QueueStats::default()
    }
    /// Whether `set_profiling` can turn kernel timing on.
    fn can_profile(&self) -> bool {
        false
    }
    /// Kernel timing on or off (profile.rs); false where the runtime has no timing events.
    fn set_profiling(&self, on: bool) -> Result<bool> {
        let _ = on;
        Ok(false)
    }
    /// Device time per kernel entry since profiling was turned on: (entry, total ns, launches).
    fn profile(&self) -> Vec<(String, f64, u64)> {
        Vec::new()
    }
}

/// A device allocation; freed when the last tensor viewing it goes away.
pub struct NativeStorage {
    pub ptr: u64,
    pub bytes: usize,
    rt: Arc<dyn Runtime>,
}

impl Drop for NativeStorage {
    fn drop(&mut self) {
        self.rt.free(self.ptr);
    }
}

impl Storage for NativeStorage {
    fn capacity_bytes(&self) -> usize {
        self.bytes
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A `Backend` over any native runtime.
pub struct NativeBackend {
    rt: Arc<dyn Runtime>,
    name: String,
    /// While profiling: each op's (bytes, FLOPs) (`op::traffic`) by its first kernel's entry
    traffic: std::sync::Mutex<Option<std::collections::BTreeMap<&'static str, (f64, f64)>>>,
}

impl NativeBackend {
    pub fn new(rt: Arc<dyn Runtime>) -> Self {
        let name = rt.name().to_string();
        NativeBackend {
            rt,
            name,
            traffic: Default::default(),
        }
    }

    /// The device address of `t`'s first element, after checking it lives on this device.
    fn addr(&self, t: &Tensor) -> Result<u64> {
        let s = t
            .storage
            .as_any()
            .downcast_ref::<NativeStorage>()
            .filter(|_| *t.device == *self.name);
        let s = s.ok_or_else(|| Error::Other(format!("tensor on {} used on {}", t.device, self.name)))?;
        let (a, n) = (t.byte_offset(), t.nbytes());
        if a + n > s.bytes {
            return Err(Error::Other(format!(
                "{}: tensor region {a}+{n} past a buffer of {} bytes",
                self.name, s.bytes
            )));
        }
        Ok(s.ptr + a as u64)
    }
}

impl Backend for NativeBackend {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn supports(&self, desc: &OpDesc) -> Support {
        plan::supports(desc)
    }

    fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        // never zero bytes (drivers refuse it), rounded up to whole words
        let bytes = dtype.nbytes(crate::tensor::numel(shape)).div_ceil(4).max(1) * 4;
        let ptr = self.rt.alloc(bytes)?;
        Ok(Tensor {
            dtype,
            shape: shape.to_vec(),
            offset: 0,
            storage: Arc::new(NativeStorage {
                ptr,
                bytes,
                rt: self.rt.clone(),
            }),
            device: Arc::from(self.name.as_str()),
        })
    }

    fn upload(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
        if bytes.len() != t.nbytes() {
            return Err(Error::Other(format!(
                "{}: upload of {} bytes to a tensor of {}",
                self.name,
                bytes.len(),
                t.nbytes()
            )));
        }
        let a = self.addr(t)?;
        if bytes.is_empty() {
            return Ok(());
        }
        self.rt.upload(a, bytes)
    }

    fn download(&self, t: &Tensor) -> Result<Vec<u8>> {
        let a = self.addr(t)?;
        let mut out = vec![0u8; t.nbytes()];
        if !out.is_empty() {
            self.rt.download(a, &mut out)?;
        }
        Ok(out)
    }

    fn run(&self, op: &Op, inputs: &[&Tensor], outputs: &[&Tensor]) -> Result<()> {
        let desc = OpDesc::of(op, inputs, outputs);
        if let Support::No(r) = self.supports(&desc) {
            return Err(unsupported(&desc, &self.name, &r));
        }
        let ins = inputs.iter().map(|t| self.addr(t)).collect::<Result<Vec<_>>>()?;
        let outs = outputs.iter().map(|t| self.addr(t)).collect::<Result<Vec<_>>>()?;
        let launches = plan::launches(&desc, &ins, &outs, self.rt.wave());
        if let (Some(map), Some(first)) = (self.traffic.lock().unwrap().as_mut(), launches.first()) {
            let (b, f) = crate::op::traffic(&desc);
            let e = map.entry(first.entry).or_default();
            (e.0, e.1) = (e.0 + b, e.1 + f);
        }
        for l in launches {
            if l.grid.0 == 0 || l.grid.1 == 0 {
                continue;
            }
            let f = self.rt.function(&l.module, l.entry)?;
            self.rt.launch(f, &l)?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.rt.flush()
    }

    fn sync(&self) -> Result<()> {
        self.rt.sync()
    }

    fn capability(&self, cap: Capability) -> Support {
        match cap {
            // queued launches (one graph a step) and page-locked read-backs behind an event
            Capability::PipelinedDecode => Support::Yes,
            // timing events around each launch (profile.rs), where the runtime has them
            Capability::Timestamps if self.rt.can_profile() => Support::Yes,
            Capability::Timestamps | Capability::BandwidthProbe => {
                Support::No(format!("not implemented on the native backends ({})", self.name))
            }
        }
    }

    fn submit_readback(&self, t: &Tensor) -> Result<PendingRead<'_>> {
        let ticket = self.start_read(t)?;
        Ok(PendingRead::new(move || self.finish_read(ticket)))
    }

    fn start_read(&self, t: &Tensor) -> Result<ReadTicket> {
        let a = self.addr(t)?;
        self.rt.read_start(a, t.nbytes())
    }

    fn finish_read(&self, ticket: ReadTicket) -> Result<Vec<u8>> {
        match ticket {
            ReadTicket::Ready(b) => Ok(b),
            ReadTicket::Pending(id) => self.rt.read_finish(id),
        }
    }

    fn set_profiling(&self, on: bool) -> Result<()> {
        let mut traffic = self.traffic.lock().unwrap();
        match (on, traffic.is_some()) {
            (true, false) => *traffic = Some(Default::default()),
            (false, _) => *traffic = None,
            _ => {}
        }
        drop(traffic);
        match self.rt.set_profiling(on)? {
            true => Ok(()),
            false if !on => Ok(()),
            false => Err(crate::backend::refused(self, Capability::Timestamps)),
        }
    }

    fn profile(&self) -> Vec<crate::backend::KernelTime> {
        let traffic = self.traffic.lock().unwrap();
        let of = |k: &str| traffic.as_ref().and_then(|m| m.get(k).copied()).unwrap_or_default();
        self.rt
            .profile()
            .into_iter()
            .map(|(kernel, ns, dispatches)| {
                let (bytes, flops) = of(&kernel);
                crate::backend::KernelTime {
                    kernel,
                    ns,
                    dispatches,
                    bytes,
                    flops,
                }
            })
            .collect()
    }

    fn last_submit_dispatches(&self) -> Option<u64> {
        Some(self.rt.queue_stats().last_submit)
    }
}
