//! The `cuda` backend (feature `cuda`): the hip/ kernels on NVIDIA GPUs, compiled by NVRTC
//! after our compat prelude (hip/cuda_prelude.h), so every native kernel runs in the
//! cross-device harness on hardware we can reach.
//!
//! The CUDA driver (libcuda) and NVRTC (libnvrtc) are loaded at run time (cudarc's dynamic
//! loading); a machine without them, or without a device, has this backend absent with the reason
//! ([`probe`]). This file is only the driver and NVRTC calls ([`Cuda`], [`Nvrtc`]); the runtime
//! over them is the one the hip backend has too (`native::device`), where every call is checked
//! and turned into `Error::Device` naming the call. Memory comes from cuMemAlloc (device-only; never managed memory). Kernels are compiled
//! once per (source, dtype substitution), cached in memory and on disk by (source hash, sm arch,
//! NVRTC version). Kernels run on one blocking stream (queued, then replayed as CUDA graphs:
//! native/queue.rs) and the synchronous copies on the legacy default stream wait for it, so
//! uploads, launches and downloads stay in order.
use super::native::device::{checked, device_name, out, rtc_log, status, Device, Driver, Rtc, Status};
use super::native::{plan::BLOCK, Func};
use crate::error::Result;
use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::{Arc, OnceLock};

/// A CUDA device: the driver API over the device's primary context.
pub struct Cuda {
    ctx: sys::CUcontext,
    /// every launch, graph and asynchronous copy goes here (a blocking stream: the synchronous
    /// copies on the legacy default stream wait for it)
    stream: sys::CUstream,
}

/// The runtime of one CUDA device.
pub type CudaRuntime = Device<Cuda>;

// The context is a plain driver handle, valid on any thread once it is made current there (`bind`).
unsafe impl Send for Cuda {}
unsafe impl Sync for Cuda {}

fn err_text(r: sys::CUresult) -> String {
    let e = cudarc::driver::result::DriverError(r);
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{r:?}"));
    let what = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name} ({what})")
}

fn st(call: &'static str, r: sys::CUresult) -> Status {
    status(call, r, sys::CUresult::CUDA_SUCCESS, err_text)
}

fn rtc_st(call: &'static str, r: nvrtc::nvrtcResult) -> Status {
    status(call, r, nvrtc::nvrtcResult::NVRTC_SUCCESS, |r| format!("{r:?}"))
}

fn check(device: &str, call: &'static str, r: sys::CUresult) -> Result<()> {
    checked(device, st(call, r), str::to_string)
}

/// NVRTC is often installed outside the loader's path (a CUDA toolkit in /usr/local/cuda, a pip
/// wheel). Load it by full path from the usual places first; cudarc's later load by soname then
/// finds this copy.
fn preload_nvrtc() {
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(d) = std::env::var_os(var) {
            dirs.push(std::path::PathBuf::from(&d).join("lib64"));
            dirs.push(std::path::PathBuf::from(&d).join("lib"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    for d in dirs {
        for n in ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"] {
            let p = d.join(n);
            if p.exists() {
                if let Ok(lib) = unsafe { libloading::Library::new(&p) } {
                    std::mem::forget(lib);
                    return;
                }
            }
        }
    }
}

/// Every CUDA device, or why there are none. Probed once per process.
pub fn probe() -> std::result::Result<Vec<Arc<CudaRuntime>>, String> {
    static P: OnceLock<std::result::Result<Vec<Arc<CudaRuntime>>, String>> = OnceLock::new();
    P.get_or_init(probe_once).clone()
}

fn probe_once() -> std::result::Result<Vec<Arc<CudaRuntime>>, String> {
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so not found)".into());
    }
    let r = unsafe { sys::cuInit(0) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("no CUDA device (cuInit: {})", err_text(r)));
    }
    let mut count = 0;
    let r = unsafe { sys::cuDeviceGetCount(&mut count) };
    if r != sys::CUresult::CUDA_SUCCESS || count == 0 {
        return Err(format!("no CUDA device (cuDeviceGetCount={count}: {})", err_text(r)));
    }
    if !unsafe { nvrtc::is_culib_present() } {
        preload_nvrtc();
    }
    if !unsafe { nvrtc::is_culib_present() } {
        return Err(
            "no NVRTC (libnvrtc.so not found: put the CUDA toolkit's lib64 on LD_LIBRARY_PATH or set CUDA_HOME)".into(),
        );
    }
    let (mut maj, mut min) = (0, 0);
    let r = unsafe { nvrtc::nvrtcVersion(&mut maj, &mut min) };
    if r != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("NVRTC unusable (nvrtcVersion: {r:?})"));
    }
    let compiler = format!("nvrtc {maj}.{min}");
    let mut driver = 0;
    unsafe { sys::cuDriverGetVersion(&mut driver) };
    let mut out = Vec::new();
    for ordinal in 0..count {
        out.push(Arc::new(
            open(ordinal, count, &compiler, driver).map_err(|e| e.to_string())?,
        ));
    }
    Ok(out)
}

fn open(ordinal: i32, count: i32, compiler: &str, driver: i32) -> Result<CudaRuntime> {
    let pre = format!("cuda:{ordinal}");
    let mut dev = 0;
    check(&pre, "cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
    let mut buf = [0 as std::ffi::c_char; 256];
    check(&pre, "cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(buf.as_mut_ptr(), 256, dev)
    })?;
    let adapter = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
    let attr = |a: sys::CUdevice_attribute, what: &str| -> Result<i32> {
        let mut v = 0;
        let r = unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) };
        checked(&pre, st("cuDeviceGetAttribute", r), |c| format!("{c}({what})"))?;
        Ok(v)
    };
    let major = attr(
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        "compute capability major",
    )?;
    let minor = attr(
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        "compute capability minor",
    )?;
    let sms = attr(
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        "multiprocessor count",
    )?;
    let mut mem = 0usize;
    check(&pre, "cuDeviceTotalMem", unsafe {
        sys::cuDeviceTotalMem_v2(&mut mem, dev)
    })?;
    let mut ctx = null_mut();
    check(&pre, "cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    })?;
    check(&pre, "cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
    let mut stream = null_mut();
    check(&pre, "cuStreamCreate", unsafe {
        sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_DEFAULT as u32)
    })?;
    let arch = format!("sm_{major}{minor}");
    let description = format!(
        "{adapter}, {arch}, {sms} SMs, {} GiB, driver CUDA {}.{}, {compiler}, warp 32",
        mem >> 30,
        driver / 1000,
        (driver % 1000) / 10
    );
    let name = device_name("cuda", &adapter, ordinal, count);
    Ok(Device::new(
        Cuda { ctx, stream },
        name,
        arch,
        compiler.to_string(),
        description,
        32,
    ))
}

/// Why this build's `cuda` backend has no device here, if it has none.
pub fn absent_reason() -> Option<String> {
    probe().err()
}

impl Driver for Cuda {
    type Rtc = Nvrtc;

    fn bind(&self) -> Status {
        st("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    fn alloc(&self, bytes: usize) -> Status<u64> {
        out(0, |p| st("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(p, bytes) }))
    }

    fn free(&self, ptr: u64) {
        unsafe { sys::cuMemFree_v2(ptr) };
    }

    fn upload(&self, ptr: u64, bytes: &[u8]) -> Status {
        // asynchronous on the stream: from pageable memory the driver stages the bytes before it
        // returns, and the copy waits for the queued kernels without the host waiting for them
        st("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(ptr, bytes.as_ptr() as *const c_void, bytes.len(), self.stream)
        })
    }

    fn download(&self, ptr: u64, out: &mut [u8]) -> Status {
        st("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, ptr, out.len())
        })
    }

    fn load(&self, image: &[u8]) -> Status<usize> {
        let image = image.as_ptr() as *const c_void;
        out(null_mut(), |m| {
            st("cuModuleLoadData", unsafe { sys::cuModuleLoadData(m, image) })
        })
        .map(|m| m as usize)
    }

    fn function(&self, module: usize, entry: &CStr) -> Status<Func> {
        let module = module as sys::CUmodule;
        out(null_mut(), |f| {
            st("cuModuleGetFunction", unsafe {
                sys::cuModuleGetFunction(f, module, entry.as_ptr())
            })
        })
        .map(|f| Func(f as usize as u64))
    }

    fn launch(&self, f: Func, grid: (u32, u32), params: &mut [*mut c_void]) -> Status {
        let (f, p) = (f.0 as usize as sys::CUfunction, params.as_mut_ptr());
        st("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(f, grid.0, grid.1, 1, BLOCK, 1, 1, 0, self.stream, p, null_mut())
        })
    }

    fn sync(&self) -> Status {
        st("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    fn capture_begin(&self) -> Status {
        // relaxed: other threads may use the context meanwhile (they do not touch this stream)
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        st("cuStreamBeginCapture", unsafe {
            sys::cuStreamBeginCapture_v2(self.stream, mode)
        })
    }

    fn capture_end(&self) -> Status<usize> {
        out(null_mut(), |g| {
            st("cuStreamEndCapture", unsafe { sys::cuStreamEndCapture(self.stream, g) })
        })
        .map(|g| g as usize)
    }

    fn graph_instantiate(&self, graph: usize) -> Status<usize> {
        out(null_mut(), |e| {
            st("cuGraphInstantiateWithFlags", unsafe {
                sys::cuGraphInstantiateWithFlags(e, graph as sys::CUgraph, 0)
            })
        })
        .map(|e| e as usize)
    }

    fn graph_update(&self, exec: usize, graph: usize) -> bool {
        let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
        let r = unsafe { sys::cuGraphExecUpdate_v2(exec as sys::CUgraphExec, graph as sys::CUgraph, &mut info) };
        r == sys::CUresult::CUDA_SUCCESS
    }

    fn graph_launch(&self, exec: usize) -> Status {
        st("cuGraphLaunch", unsafe {
            sys::cuGraphLaunch(exec as sys::CUgraphExec, self.stream)
        })
    }

    fn graph_destroy(&self, graph: usize) {
        unsafe { sys::cuGraphDestroy(graph as sys::CUgraph) };
    }

    fn exec_destroy(&self, exec: usize) {
        unsafe { sys::cuGraphExecDestroy(exec as sys::CUgraphExec) };
    }

    fn host_alloc(&self, bytes: usize) -> Status<usize> {
        out(null_mut(), |p| {
            st("cuMemAllocHost", unsafe { sys::cuMemAllocHost_v2(p, bytes) })
        })
        .map(|p| p as usize)
    }

    fn host_free(&self, host: usize) {
        unsafe { sys::cuMemFreeHost(host as *mut c_void) };
    }

    fn event_create(&self) -> Status<usize> {
        // no timing: the cheapest event to record and wait on
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        out(null_mut(), |e| {
            st("cuEventCreate", unsafe { sys::cuEventCreate(e, flags) })
        })
        .map(|e| e as usize)
    }

    fn event_destroy(&self, event: usize) {
        unsafe { sys::cuEventDestroy_v2(event as sys::CUevent) };
    }

    fn download_async(&self, ptr: u64, host: usize, bytes: usize, event: usize) -> Status {
        st("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, ptr, bytes, self.stream)
        })?;
        st("cuEventRecord", unsafe {
            sys::cuEventRecord(event as sys::CUevent, self.stream)
        })
    }

    fn event_wait(&self, event: usize) -> Status {
        st("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(event as sys::CUevent)
        })
    }

    fn timing_event_create(&self) -> Status<usize> {
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT as u32;
        out(null_mut(), |e| {
            st("cuEventCreate", unsafe { sys::cuEventCreate(e, flags) })
        })
        .map(|e| e as usize)
    }

    fn event_record(&self, event: usize) -> Status {
        st("cuEventRecord", unsafe {
            sys::cuEventRecord(event as sys::CUevent, self.stream)
        })
    }

    fn event_elapsed_ms(&self, start: usize, end: usize) -> Status<f32> {
        out(0.0f32, |ms| {
            st("cuEventElapsedTime", unsafe {
                sys::cuEventElapsedTime_v2(ms, start as sys::CUevent, end as sys::CUevent)
            })
        })
    }
}

/// NVRTC: the prelude + hip/ source -> a CUBIN for an `sm_XY` arch. Needs no GPU.
pub struct Nvrtc;

impl Rtc for Nvrtc {
    type Program = nvrtc::nvrtcProgram;
    const IMAGE: &'static str = "cubin";
    const CUDA_PRELUDE: bool = true;

    fn options(arch: &str) -> Vec<String> {
        vec![
            format!("--gpu-architecture={arch}"),
            "--std=c++17".into(),
            "-lineinfo".into(),
        ]
    }

    fn create(src: &CStr, name: &CStr) -> Status<Self::Program> {
        let (src, name, none) = (src.as_ptr(), name.as_ptr(), std::ptr::null());
        out(null_mut(), |p| {
            rtc_st("nvrtcCreateProgram", unsafe {
                nvrtc::nvrtcCreateProgram(p, src, name, 0, none, none)
            })
        })
    }

    fn compile(p: Self::Program, options: &[*const c_char]) -> Status {
        rtc_st("nvrtcCompileProgram", unsafe {
            nvrtc::nvrtcCompileProgram(p, options.len() as i32, options.as_ptr())
        })
    }

    fn log(p: Self::Program) -> String {
        rtc_log(
            |n| unsafe { nvrtc::nvrtcGetProgramLogSize(p, n) },
            |b| unsafe { nvrtc::nvrtcGetProgramLog(p, b) },
        )
    }

    fn code_size(p: Self::Program) -> Status<usize> {
        out(0, |n| {
            rtc_st("nvrtcGetCUBINSize", unsafe { nvrtc::nvrtcGetCUBINSize(p, n) })
        })
    }

    fn code(p: Self::Program, out: &mut [u8]) -> Status {
        rtc_st("nvrtcGetCUBIN", unsafe {
            nvrtc::nvrtcGetCUBIN(p, out.as_mut_ptr() as *mut c_char)
        })
    }

    fn destroy(mut p: Self::Program) {
        unsafe { nvrtc::nvrtcDestroyProgram(&mut p) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::native;
    use crate::parity::cases;

    /// Compiles every module the parity cases use with NVRTC for sm_90, no GPU needed. Run where
    /// libnvrtc loads (`LD_LIBRARY_PATH=.../cuda/lib64 cargo test --features cuda -- --ignored`).
    #[test]
    #[ignore = "needs libnvrtc"]
    fn nvrtc_compiles_every_planned_module() {
        if !unsafe { nvrtc::is_culib_present() } {
            preload_nvrtc();
        }
        assert!(unsafe { nvrtc::is_culib_present() }, "libnvrtc not found");
        let (mut maj, mut min) = (0, 0);
        unsafe { nvrtc::nvrtcVersion(&mut maj, &mut min) };
        let mut seen = std::collections::BTreeSet::new();
        for c in cases::all() {
            let d = c.desc();
            if !native::plan::supports(&d).is_yes() {
                continue;
            }
            for l in native::plan::launches(&d, &vec![0; d.inputs.len()], &vec![0; d.outputs.len()], 32) {
                if seen.insert(l.module.label()) {
                    let img = native::device::compile::<Nvrtc>(
                        "cuda/test",
                        &l.module,
                        "sm_90",
                        &format!("nvrtc {maj}.{min}"),
                    )
                    .unwrap();
                    assert!(!img.is_empty());
                }
            }
        }
        eprintln!("{} modules compiled", seen.len());
    }
}
