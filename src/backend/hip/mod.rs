//! The `hip` backend (feature `hip`): the hip/ kernels on AMD GPUs through ROCm.
//!
//! libamdhip64 and libhiprtc are loaded at run time (cubecl-hip-sys resolves them through
//! libloading, from ROCM_PATH / HIP_PATH or the loader's path), so this builds on machines with
//! no ROCm. Without the runtime, or with no device (`hipGetDeviceCount` answers hipErrorNoDevice,
//! 100, and a count of 0), the backend is absent with the reason ([`probe`]) and every case on it
//! counts as skipped, never passed. Kernels are compiled by hiprtc for the device's gfx arch
//! (`gcnArchName`, e.g. gfx1100 or gfx1151), cached in memory and on disk by (source hash, arch,
//! HIP version). Memory comes from hipMalloc: device-only, never managed memory, no host
//! fallback. This file is only the HIP and hiprtc calls ([`Hip`], [`Hiprtc`]); the runtime over
//! them is the one the cuda backend has too (`native::device`), where every call is checked and
//! turned into `Error::Device` naming the call.
use super::native::device::{checked, device_name, out, rtc_log, status, Device, Driver, Rtc, Status};
use super::native::{plan::BLOCK, Func};
use crate::error::Result;
use cubecl_hip_sys as hip;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::{Arc, OnceLock};

/// A ROCm device: the HIP runtime API with the device made current by its ordinal.
pub struct Hip {
    ordinal: i32,
    /// every launch, graph and asynchronous copy goes here (a blocking stream: the synchronous
    /// copies on the null stream wait for it)
    stream: hip::hipStream_t,
}

// The stream is a plain runtime handle, usable from any thread once the device is bound.
unsafe impl Send for Hip {}
unsafe impl Sync for Hip {}

/// The runtime of one ROCm device.
pub type HipRuntime = Device<Hip>;

fn err_text(r: hip::hipError_t) -> String {
    let name = unsafe { hip::hipGetErrorName(r) };
    if name.is_null() {
        return format!("hipError {r}");
    }
    format!("{} ({r})", unsafe { CStr::from_ptr(name) }.to_string_lossy())
}

fn st(call: &'static str, r: hip::hipError_t) -> Status {
    status(call, r, hip::hipError_t_hipSuccess, err_text)
}

fn rtc_st(call: &'static str, r: hip::hiprtcResult) -> Status {
    status(call, r, hip::hiprtcResult_HIPRTC_SUCCESS, |r| {
        format!("hiprtcResult {r}")
    })
}

fn check(device: &str, call: &'static str, r: hip::hipError_t) -> Result<()> {
    checked(device, st(call, r), str::to_string)
}

/// Every ROCm device, or why there are none. Probed once per process.
pub fn probe() -> std::result::Result<Vec<Arc<HipRuntime>>, String> {
    static P: OnceLock<std::result::Result<Vec<Arc<HipRuntime>>, String>> = OnceLock::new();
    P.get_or_init(probe_once).clone()
}

fn probe_once() -> std::result::Result<Vec<Arc<HipRuntime>>, String> {
    if !hip::is_available() {
        return Err(
            "no ROCm runtime (libamdhip64.so / libhiprtc.so not found; install ROCm 6.2+ or set ROCM_PATH)".into(),
        );
    }
    let r = unsafe { hip::hipInit(0) };
    if r != hip::hipError_t_hipSuccess {
        return Err(format!("no ROCm device (hipInit: {})", err_text(r)));
    }
    let mut count = 0;
    let r = unsafe { hip::hipGetDeviceCount(&mut count) };
    if r != hip::hipError_t_hipSuccess || count == 0 {
        return Err(format!("no ROCm device (hipGetDeviceCount={count}: {})", err_text(r)));
    }
    let mut rv = 0;
    unsafe { hip::hipRuntimeGetVersion(&mut rv) };
    let compiler = format!(
        "hiprtc (HIP {}.{}.{})",
        rv / 10_000_000,
        (rv / 100_000) % 100,
        rv % 100_000
    );
    let mut out = Vec::new();
    for ordinal in 0..count {
        out.push(Arc::new(open(ordinal, count, &compiler).map_err(|e| e.to_string())?));
    }
    Ok(out)
}

fn open(ordinal: i32, count: i32, compiler: &str) -> Result<HipRuntime> {
    let pre = format!("hip:{ordinal}");
    check(&pre, "hipSetDevice", unsafe { hip::hipSetDevice(ordinal) })?;
    let mut props: hip::hipDeviceProp_tR0600 = unsafe { std::mem::zeroed() };
    check(&pre, "hipGetDeviceProperties", unsafe {
        hip::hipGetDevicePropertiesR0600(&mut props, ordinal)
    })?;
    let adapter = unsafe { CStr::from_ptr(props.name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let arch = unsafe { CStr::from_ptr(props.gcnArchName.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut wave = 0;
    check(&pre, "hipDeviceGetAttribute(warp size)", unsafe {
        hip::hipDeviceGetAttribute(&mut wave, hip::hipDeviceAttribute_t_hipDeviceAttributeWarpSize, ordinal)
    })?;
    let description = format!(
        "{adapter}, {arch}, {} CUs, {} GiB, {compiler}, wave{wave}",
        props.multiProcessorCount,
        props.totalGlobalMem >> 30
    );
    let name = device_name("hip", &adapter, ordinal, count);
    let mut stream = null_mut();
    check(&pre, "hipStreamCreateWithFlags", unsafe {
        hip::hipStreamCreateWithFlags(&mut stream, 0)
    })?;
    Ok(Device::new(
        Hip { ordinal, stream },
        name,
        arch,
        compiler.to_string(),
        description,
        wave.max(1) as u32,
    ))
}

/// Why this build's `hip` backend has no device here, if it has none.
pub fn absent_reason() -> Option<String> {
    probe().err()
}

impl Driver for Hip {
    type Rtc = Hiprtc;

    fn bind(&self) -> Status {
        st("hipSetDevice", unsafe { hip::hipSetDevice(self.ordinal) })
    }

    fn alloc(&self, bytes: usize) -> Status<u64> {
        out(null_mut(), |p| st("hipMalloc", unsafe { hip::hipMalloc(p, bytes) })).map(|p| p as usize as u64)
    }

    fn free(&self, ptr: u64) {
        unsafe { hip::hipFree(ptr as usize as *mut c_void) };
    }

    fn upload(&self, ptr: u64, bytes: &[u8]) -> Status {
        // asynchronous on the stream: from pageable memory the runtime stages the bytes before it
        // returns, and the copy waits for the queued kernels without the host waiting for them
        st("hipMemcpyHtoDAsync", unsafe {
            hip::hipMemcpyHtoDAsync(
                ptr as usize as hip::hipDeviceptr_t,
                bytes.as_ptr() as *mut c_void,
                bytes.len(),
                self.stream,
            )
        })
    }

    fn download(&self, ptr: u64, out: &mut [u8]) -> Status {
        st("hipMemcpyDtoH", unsafe {
            hip::hipMemcpyDtoH(
                out.as_mut_ptr() as *mut c_void,
                ptr as usize as hip::hipDeviceptr_t,
                out.len(),
            )
        })
    }

    fn load(&self, image: &[u8]) -> Status<usize> {
        let image = image.as_ptr() as *const c_void;
        out(null_mut(), |m| {
            st("hipModuleLoadData", unsafe { hip::hipModuleLoadData(m, image) })
        })
        .map(|m| m as usize)
    }

    fn function(&self, module: usize, entry: &CStr) -> Status<Func> {
        let module = module as hip::hipModule_t;
        out(null_mut(), |f| {
            st("hipModuleGetFunction", unsafe {
                hip::hipModuleGetFunction(f, module, entry.as_ptr())
            })
        })
        .map(|f| Func(f as usize as u64))
    }

    fn launch(&self, f: Func, grid: (u32, u32), params: &mut [*mut c_void]) -> Status {
        let (f, p) = (f.0 as usize as hip::hipFunction_t, params.as_mut_ptr());
        st("hipModuleLaunchKernel", unsafe {
            hip::hipModuleLaunchKernel(f, grid.0, grid.1, 1, BLOCK, 1, 1, 0, self.stream, p, null_mut())
        })
    }

    fn sync(&self) -> Status {
        st("hipDeviceSynchronize", unsafe { hip::hipDeviceSynchronize() })
    }

    fn capture_begin(&self) -> Status {
        let mode = hip::hipStreamCaptureMode_hipStreamCaptureModeRelaxed;
        st("hipStreamBeginCapture", unsafe {
            hip::hipStreamBeginCapture(self.stream, mode)
        })
    }

    fn capture_end(&self) -> Status<usize> {
        out(null_mut(), |g| {
            st("hipStreamEndCapture", unsafe {
                hip::hipStreamEndCapture(self.stream, g)
            })
        })
        .map(|g| g as usize)
    }

    fn graph_instantiate(&self, graph: usize) -> Status<usize> {
        out(null_mut(), |e| {
            st("hipGraphInstantiateWithFlags", unsafe {
                hip::hipGraphInstantiateWithFlags(e, graph as hip::hipGraph_t, 0)
            })
        })
        .map(|e| e as usize)
    }

    fn graph_update(&self, exec: usize, graph: usize) -> bool {
        let mut node = null_mut();
        let mut result = 0;
        let r = unsafe {
            hip::hipGraphExecUpdate(
                exec as hip::hipGraphExec_t,
                graph as hip::hipGraph_t,
                &mut node,
                &mut result,
            )
        };
        r == hip::hipError_t_hipSuccess && result == hip::hipGraphExecUpdateResult_hipGraphExecUpdateSuccess
    }

    fn graph_launch(&self, exec: usize) -> Status {
        st("hipGraphLaunch", unsafe {
            hip::hipGraphLaunch(exec as hip::hipGraphExec_t, self.stream)
        })
    }

    fn graph_destroy(&self, graph: usize) {
        unsafe { hip::hipGraphDestroy(graph as hip::hipGraph_t) };
    }

    fn exec_destroy(&self, exec: usize) {
        unsafe { hip::hipGraphExecDestroy(exec as hip::hipGraphExec_t) };
    }

    fn host_alloc(&self, bytes: usize) -> Status<usize> {
        out(null_mut(), |p| {
            st("hipHostMalloc", unsafe { hip::hipHostMalloc(p, bytes, 0) })
        })
        .map(|p| p as usize)
    }

    fn host_free(&self, host: usize) {
        unsafe { hip::hipHostFree(host as *mut c_void) };
    }

    fn event_create(&self) -> Status<usize> {
        out(null_mut(), |e| {
            st("hipEventCreateWithFlags", unsafe {
                hip::hipEventCreateWithFlags(e, hip::hipEventDisableTiming)
            })
        })
        .map(|e| e as usize)
    }

    fn event_destroy(&self, event: usize) {
        unsafe { hip::hipEventDestroy(event as hip::hipEvent_t) };
    }

    fn download_async(&self, ptr: u64, host: usize, bytes: usize, event: usize) -> Status {
        st("hipMemcpyDtoHAsync", unsafe {
            hip::hipMemcpyDtoHAsync(
                host as *mut c_void,
                ptr as usize as hip::hipDeviceptr_t,
                bytes,
                self.stream,
            )
        })?;
        st("hipEventRecord", unsafe {
            hip::hipEventRecord(event as hip::hipEvent_t, self.stream)
        })
    }

    fn event_wait(&self, event: usize) -> Status {
        st("hipEventSynchronize", unsafe {
            hip::hipEventSynchronize(event as hip::hipEvent_t)
        })
    }

    fn timing_event_create(&self) -> Status<usize> {
        out(null_mut(), |e| st("hipEventCreate", unsafe { hip::hipEventCreate(e) })).map(|e| e as usize)
    }

    fn event_record(&self, event: usize) -> Status {
        st("hipEventRecord", unsafe {
            hip::hipEventRecord(event as hip::hipEvent_t, self.stream)
        })
    }

    fn event_elapsed_ms(&self, start: usize, end: usize) -> Status<f32> {
        out(0.0f32, |ms| {
            st("hipEventElapsedTime", unsafe {
                hip::hipEventElapsedTime(ms, start as hip::hipEvent_t, end as hip::hipEvent_t)
            })
        })
    }
}

/// hiprtc: the hip/ source -> a code object for a gfx arch. Needs no GPU, only libhiprtc.
pub struct Hiprtc;

impl Rtc for Hiprtc {
    type Program = hip::hiprtcProgram;
    const IMAGE: &'static str = "hsaco";
    const CUDA_PRELUDE: bool = false;

    fn options(arch: &str) -> Vec<String> {
        vec![format!("--offload-arch={arch}"), "-O3".into(), "-std=c++17".into()]
    }

    fn create(src: &CStr, name: &CStr) -> Status<Self::Program> {
        let (src, name, none) = (src.as_ptr(), name.as_ptr(), std::ptr::null());
        out(null_mut(), |p| {
            rtc_st("hiprtcCreateProgram", unsafe {
                hip::hiprtcCreateProgram(p, src, name, 0, none, none)
            })
        })
    }

    fn compile(p: Self::Program, options: &[*const c_char]) -> Status {
        rtc_st("hiprtcCompileProgram", unsafe {
            hip::hiprtcCompileProgram(p, options.len() as i32, options.as_ptr())
        })
    }

    fn log(p: Self::Program) -> String {
        rtc_log(
            |n| unsafe { hip::hiprtcGetProgramLogSize(p, n) },
            |b| unsafe { hip::hiprtcGetProgramLog(p, b) },
        )
    }

    fn code_size(p: Self::Program) -> Status<usize> {
        out(0, |n| {
            rtc_st("hiprtcGetCodeSize", unsafe { hip::hiprtcGetCodeSize(p, n) })
        })
    }

    fn code(p: Self::Program, out: &mut [u8]) -> Status {
        rtc_st("hiprtcGetCode", unsafe {
            hip::hiprtcGetCode(p, out.as_mut_ptr() as *mut c_char)
        })
    }

    fn destroy(mut p: Self::Program) {
        unsafe { hip::hiprtcDestroyProgram(&mut p) };
    }
}
