//! The device half of a native runtime, written once for CUDA and HIP.
//!
//! A [`Driver`] is one runtime API's calls and nothing else: each wraps one FFI call and answers
//! a [`Status`] (on failure the API's name for the call and its text for the error). [`Device`]
//! is the rest: the module and function caches, compiling through the driver's [`Rtc`] (with the
//! disk cache), binding the device before each call, the per-launch sync of `WGLLM_NATIVE_SYNC=1`.
//! Every call goes through [`checked`], which turns a failure into `Error::Device` naming the
//! call (`cuMemAlloc(4096 bytes)`, `hipModuleLaunchKernel(rms_norm (...))`).
use super::queue::{Queue, QueueStats, SubmitError};
use super::{launch_label, plan::Launch, source, with_params, Func, FuncCache, ModuleKey, Runtime};
use crate::backend::ReadTicket;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::Mutex;

/// A runtime call that failed: the API's name for the call, and its text for the error.
#[derive(Debug)]
pub struct Failure {
    pub call: &'static str,
    pub detail: String,
}

/// A runtime call's outcome.
pub type Status<T = ()> = std::result::Result<T, Failure>;

/// `r` as a [`Status`] of the call `call`: success when `r == ok`, else `detail(r)`.
pub fn status<R: PartialEq>(call: &'static str, r: R, ok: R, detail: impl FnOnce(R) -> String) -> Status {
    if r == ok {
        Ok(())
    } else {
        Err(Failure {
            call,
            detail: detail(r),
        })
    }
}

/// A failed `status` as `Error::Device` on `device`. `name` makes the call's name for the message
/// from the API's (adding the arguments worth naming); it runs only on failure.
pub fn checked<T>(device: &str, status: Status<T>, name: impl FnOnce(&str) -> String) -> Result<T> {
    status.map_err(|f| Error::Device {
        device: device.to_string(),
        call: name(f.call),
        detail: f.detail,
    })
}

/// An FFI call that writes its result through a pointer: the result, from `init`, or the failure.
pub fn out<T>(init: T, call: impl FnOnce(&mut T) -> Status) -> Status<T> {
    let mut v = init;
    call(&mut v)?;
    Ok(v)
}

/// A runtime compiler's log through its two calls (`size`, then `read` into a buffer that big).
/// Their statuses are not checked: the log only adds to a failure already being reported.
pub fn rtc_log<R>(size: impl FnOnce(&mut usize) -> R, read: impl FnOnce(*mut c_char) -> R) -> String {
    let mut n = 0usize;
    size(&mut n);
    let mut b = vec![0u8; n.max(1)];
    read(b.as_mut_ptr() as *mut c_char);
    String::from_utf8_lossy(&b).trim_end_matches('\0').trim().to_string()
}

/// One device's runtime API (the CUDA driver, or HIP): each method is one FFI call.
pub trait Driver: Send + Sync + 'static {
    /// The runtime compiler that makes this device's code objects.
    type Rtc: Rtc;
    /// Makes this device current on the calling thread.
    fn bind(&self) -> Status;
    /// `bytes` of device memory (device-only, never managed).
    fn alloc(&self, bytes: usize) -> Status<u64>;
    fn free(&self, ptr: u64);
    fn upload(&self, ptr: u64, bytes: &[u8]) -> Status;
    fn download(&self, ptr: u64, out: &mut [u8]) -> Status;
    /// Loads a code object; the module handle as an integer.
    fn load(&self, image: &[u8]) -> Status<usize>;
    fn function(&self, module: usize, entry: &CStr) -> Status<Func>;
    /// Queues `f` over `grid` blocks of `plan::BLOCK` threads on the device's stream (a blocking
    /// stream: the synchronous copies, on the legacy default stream, wait for it); `params`
    /// points at each argument's slot.
    fn launch(&self, f: Func, grid: (u32, u32), params: &mut [*mut c_void]) -> Status;
    /// Waits until the device is idle.
    fn sync(&self) -> Status;

    // Graphs (queue.rs): the stream's launches recorded by capture, replayed as one.
    /// Starts recording this thread's launches on the stream instead of running them.
    fn capture_begin(&self) -> Status;
    /// Ends the recording; the graph it made.
    fn capture_end(&self) -> Status<usize>;
    fn graph_instantiate(&self, graph: usize) -> Status<usize>;
    /// Gives `exec` the arguments and grids of `graph` (the same kernels in the same order);
    /// false when the runtime cannot, and then the caller instantiates `graph` anew.
    fn graph_update(&self, exec: usize, graph: usize) -> bool;
    /// Queues the instantiated graph on the stream.
    fn graph_launch(&self, exec: usize) -> Status;
    fn graph_destroy(&self, graph: usize);
    fn exec_destroy(&self, exec: usize);

    // Asynchronous read-back.
    /// `bytes` of page-locked host memory (asynchronous copies land there).
    fn host_alloc(&self, bytes: usize) -> Status<usize>;
    fn host_free(&self, host: usize);
    fn event_create(&self) -> Status<usize>;
    fn event_destroy(&self, event: usize);
    /// Queues a copy of `bytes` at device `ptr` into page-locked `host` on the stream, and
    /// `event` behind it.
    fn download_async(&self, ptr: u64, host: usize, bytes: usize, event: usize) -> Status;
    /// Waits until the work queued before `event` is done.
    fn event_wait(&self, event: usize) -> Status;

    // Profiling (profile.rs).
    /// An event that records the time it is reached.
    fn timing_event_create(&self) -> Status<usize>;
    /// Queues `event` on the stream.
    fn event_record(&self, event: usize) -> Status;
    /// Milliseconds between two recorded timing events, both reached.
    fn event_elapsed_ms(&self, start: usize, end: usize) -> Status<f32>;
}

/// A runtime compiler (NVRTC, hiprtc): each function is one FFI call. Needs no device.
pub trait Rtc {
    type Program: Copy;
    /// The code object's extension in the disk cache (`cubin`, `hsaco`).
    const IMAGE: &'static str;
    /// Whether the source needs hip/cuda_prelude.h first (NVRTC compiles CUDA, not HIP).
    const CUDA_PRELUDE: bool;
    /// The compile options for `arch`.
    fn options(arch: &str) -> Vec<String>;
    fn create(src: &CStr, name: &CStr) -> Status<Self::Program>;
    fn compile(p: Self::Program, options: &[*const c_char]) -> Status;
    /// The compiler's log (warnings and errors), trimmed.
    fn log(p: Self::Program) -> String;
    fn code_size(p: Self::Program) -> Status<usize>;
    fn code(p: Self::Program, out: &mut [u8]) -> Status;
    fn destroy(p: Self::Program);
}

/// `R`: the source of `m` -> a code object for `arch`, or the disk cache's copy (keyed by the
/// text's hash, `arch` and the `compiler` version). Needs no GPU.
pub fn compile<R: Rtc>(device: &str, m: &ModuleKey, arch: &str, compiler: &str) -> Result<Vec<u8>> {
    let label = m.label();
    let text = source::text(m, R::CUDA_PRELUDE).map_err(|e| Error::Device {
        device: device.into(),
        call: "kernel source".into(),
        detail: e,
    })?;
    let key = source::key(&text, arch, compiler);
    if let Some(img) = source::cache_get(&key, R::IMAGE) {
        return Ok(img);
    }
    let src = CString::new(text).map_err(|_| Error::Other(format!("{label}: NUL in kernel source")))?;
    let name = CString::new(m.file).unwrap();
    let prog = checked(device, R::create(&src, &name), |c| format!("{c}({label})"))?;
    let opts: Vec<CString> = R::options(arch).into_iter().map(|o| CString::new(o).unwrap()).collect();
    let optp: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let result: Result<Vec<u8>> = (|| {
        let compiled = R::compile(prog, &optp).map_err(|f| Failure {
            detail: format!("{}\n{}", f.detail, R::log(prog)),
            ..f
        });
        checked(device, compiled, |c| format!("{c}({label}, {arch})"))?;
        let n = checked(device, R::code_size(prog), |c| format!("{c}({label})"))?;
        let mut img = vec![0u8; n];
        checked(device, R::code(prog, &mut img), |c| format!("{c}({label})"))?;
        Ok(img)
    })();
    R::destroy(prog);
    let img = result?;
    source::cache_put(&key, R::IMAGE, &img);
    Ok(img)
}

/// A native device: its [`Driver`] and what is the same on every runtime.
pub struct Device<D: Driver> {
    name: String,
    /// `sm_90`; `gfx1100`, or a full target id (`gfx90a:sramecc+:xnack-`)
    pub arch: String,
    /// `nvrtc 13.0`, `hiprtc (HIP 6.4.1)`
    pub compiler: String,
    /// one line for `wgllm devices`
    pub description: String,
    wave: u32,
    modules: Mutex<HashMap<ModuleKey, usize>>,
    funcs: FuncCache,
    /// `WGLLM_NATIVE_SYNC=1`: launch at once and wait after every launch, so a fault names the
    /// kernel that caused it (no queue, no graphs)
    sync_each: bool,
    /// launches not yet submitted, the graphs, the read-back slots
    queue: Mutex<Queue>,
    driver: D,
}

impl<D: Driver> Device<D> {
    /// `name` as [`device_name`] makes it.
    pub fn new(driver: D, name: String, arch: String, compiler: String, description: String, wave: u32) -> Self {
        Device {
            name,
            arch,
            compiler,
            description,
            wave: wave.max(1),
            modules: Mutex::new(HashMap::new()),
            funcs: FuncCache::default(),
            sync_each: std::env::var("WGLLM_NATIVE_SYNC").is_ok_and(|v| v == "1"),
            queue: Mutex::new(Queue::default()),
            driver,
        }
    }

    /// Launches what is queued (before anything that must see the device in order).
    fn submit(&self) -> Result<()> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.is_empty() {
            return Ok(());
        }
        checked(&self.name, self.driver.bind(), str::to_string)?;
        q.submit(&self.driver)
            .map_err(|SubmitError { failure, launch }| Error::Device {
                device: self.name.clone(),
                call: match &launch {
                    Some(l) => format!("{}({})", failure.call, launch_label(l)),
                    None => failure.call.to_string(),
                },
                detail: failure.detail,
            })
    }

    /// Binds the device, then makes the call.
    fn call<T>(&self, status: impl FnOnce(&D) -> Status<T>, name: impl FnOnce(&str) -> String) -> Result<T> {
        checked(&self.name, self.driver.bind(), str::to_string)?;
        checked(&self.name, status(&self.driver), name)
    }

    /// The source of `m` compiled for this device's arch (or the disk cache's copy).
    pub fn compile(&self, m: &ModuleKey) -> Result<Vec<u8>> {
        compile::<D::Rtc>(&self.name, m, &self.arch, &self.compiler)
    }
}

impl<D: Driver> Drop for Device<D> {
    fn drop(&mut self) {
        let q = self.queue.get_mut().unwrap_or_else(|e| e.into_inner());
        if self.driver.bind().is_ok() {
            q.destroy(&self.driver);
        }
    }
}

/// `cuda/nvidia-h200`, or `cuda/nvidia-h200-1` when the machine has more than one.
pub fn device_name(runtime: &str, adapter: &str, ordinal: i32, count: i32) -> String {
    let s: String = adapter
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let slug = s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-");
    if count > 1 {
        format!("{runtime}/{slug}-{ordinal}")
    } else {
        format!("{runtime}/{slug}")
    }
}

impl<D: Driver> Runtime for Device<D> {
    fn name(&self) -> &str {
        &self.name
    }

    fn wave(&self) -> u32 {
        self.wave
    }

    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.call(|d| d.alloc(bytes), |c| format!("{c}({bytes} bytes)"))
    }

    fn free(&self, ptr: u64) {
        // queued kernels may still read it: they run first. A failure here has no caller to go to;
        // the device is then broken and the next sync reports it.
        let _ = self.submit();
        if self.driver.bind().is_ok() {
            self.driver.free(ptr);
        }
    }

    fn upload(&self, ptr: u64, bytes: &[u8]) -> Result<()> {
        self.submit()?;
        self.call(|d| d.upload(ptr, bytes), str::to_string)
    }

    fn download(&self, ptr: u64, out: &mut [u8]) -> Result<()> {
        self.submit()?;
        self.call(|d| d.download(ptr, out), str::to_string)
    }

    fn function(&self, m: &ModuleKey, entry: &'static str) -> Result<Func> {
        self.funcs.get_or_load(m, entry, || {
            let label = m.label();
            let module = {
                let mut mods = self.modules.lock().unwrap();
                match mods.get(m) {
                    Some(&md) => md,
                    None => {
                        let img = self.compile(m)?;
                        let md = self.call(|d| d.load(&img), |c| format!("{c}({label})"))?;
                        mods.insert(m.clone(), md);
                        md
                    }
                }
            };
            let cname = CString::new(entry).unwrap();
            self.call(|d| d.function(module, &cname), |c| format!("{c}({entry} in {label})"))
        })
    }

    fn launch(&self, f: Func, l: &Launch) -> Result<()> {
        if !self.sync_each {
            self.queue.lock().unwrap_or_else(|e| e.into_inner()).push(f, l);
            return Ok(());
        }
        // call names are built only on failure: launches are the hot path
        with_params(&l.args, |p| {
            self.call(|d| d.launch(f, l.grid, p), |c| format!("{c}({})", launch_label(l)))
        })?;
        self.call(|d| d.sync(), |c| format!("{c}(after {})", launch_label(l)))
    }

    fn sync(&self) -> Result<()> {
        self.submit()?;
        self.call(|d| d.sync(), str::to_string)
    }

    fn flush(&self) -> Result<()> {
        self.submit()
    }

    fn read_start(&self, ptr: u64, bytes: usize) -> Result<ReadTicket> {
        if bytes > super::queue::READ_SLOT_BYTES {
            let mut out = vec![0u8; bytes];
            self.download(ptr, &mut out)?;
            return Ok(ReadTicket::Ready(out));
        }
        self.submit()?;
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let t = self.call(|d| q.read_start(d, ptr, bytes), |c| format!("{c}({bytes} bytes)"))?;
        Ok(ReadTicket::Pending(t as u64))
    }

    fn read_finish(&self, ticket: u64) -> Result<Vec<u8>> {
        let slot = self
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .slot(ticket as usize);
        let Some((event, host, bytes)) = slot else {
            return Err(Error::Other(format!("{}: no read-back {ticket} in flight", self.name)));
        };
        // wait without the queue's lock: the host may record the next step meanwhile
        let waited = self.call(|d| d.event_wait(event), str::to_string);
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let out = waited.map(|_| unsafe { std::slice::from_raw_parts(host as *const u8, bytes) }.to_vec());
        q.release(ticket as usize);
        out
    }

    fn queue_stats(&self) -> QueueStats {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).stats
    }

    fn can_profile(&self) -> bool {
        true
    }

    fn set_profiling(&self, on: bool) -> Result<bool> {
        // what is queued runs under the old setting
        self.submit()?;
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        match (on, q.profiler.take()) {
            (true, p) => q.profiler = Some(p.unwrap_or_default()),
            (false, Some(mut p)) => {
                if self.driver.bind().is_ok() {
                    p.destroy(&self.driver);
                }
            }
            (false, None) => {}
        }
        Ok(true)
    }

    fn profile(&self) -> Vec<(String, f64, u64)> {
        // a failed submit is reported by the next call that can report it
        let _ = self.submit();
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let totals = q.profiler.as_ref().map(|p| &p.totals);
        totals
            .into_iter()
            .flatten()
            .map(|(k, (ns, n))| (k.to_string(), *ns, *n))
            .collect()
    }
}
