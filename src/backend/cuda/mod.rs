//! The `cuda` backend (feature `cuda`): the hip/ kernels on NVIDIA GPUs, compiled by NVRTC
//! after our compat prelude (hip/cuda_prelude.h), so every native kernel runs in the
//! cross-device harness on hardware we can reach.
//!
//! The CUDA driver (libcuda) and NVRTC (libnvrtc) are loaded at run time (cudarc's dynamic
//! loading); a machine without them, or without a device, has this backend absent with the reason
//! ([`probe`]). Every driver and NVRTC call is checked and turned into `Error::Device` naming the
//! call. Memory comes from cuMemAlloc (device-only; never managed memory). Kernels are compiled
//! once per (source, dtype substitution), cached in memory and on disk by (source hash, sm arch,
//! NVRTC version). Work is queued on the legacy default stream, so uploads, launches and
//! downloads stay in order.
use super::native::{
    self, arg_slots, launch_label, plan::Launch, source, Func, FuncCache, ModuleKey, NativeBackend, Runtime,
};
use crate::error::{Error, Result};
use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};

pub struct CudaRuntime {
    name: String,
    ctx: sys::CUcontext,
    /// `sm_90`
    pub arch: String,
    /// `nvrtc 13.0`
    pub compiler: String,
    pub description: String,
    modules: Mutex<HashMap<ModuleKey, usize>>,
    funcs: FuncCache,
    sync_each: bool,
}

// The context and module handles are plain driver handles, valid on any thread once the context
// is made current there (`bind`).
unsafe impl Send for CudaRuntime {}
unsafe impl Sync for CudaRuntime {}

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

fn check(device: &str, call: &str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Device {
            device: device.to_string(),
            call: call.to_string(),
            detail: err_text(r),
        })
    }
}

fn nvrtc_check(device: &str, call: &str, r: nvrtc::nvrtcResult) -> Result<()> {
    if r == nvrtc::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Device {
            device: device.to_string(),
            call: call.to_string(),
            detail: format!("{r:?}"),
        })
    }
}

fn slug(name: &str) -> String {
    let s: String = name
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
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
        check(&pre, &format!("cuDeviceGetAttribute({what})"), unsafe {
            sys::cuDeviceGetAttribute(&mut v, a, dev)
        })?;
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
    let mut ctx = std::ptr::null_mut();
    check(&pre, "cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    })?;
    let mut name = format!("cuda/{}", slug(&adapter));
    if count > 1 {
        name = format!("{name}-{ordinal}");
    }
    let arch = format!("sm_{major}{minor}");
    let description = format!(
        "{adapter}, {arch}, {sms} SMs, {} GiB, driver CUDA {}.{}, {compiler}, warp 32",
        mem >> 30,
        driver / 1000,
        (driver % 1000) / 10
    );
    Ok(CudaRuntime {
        name,
        ctx,
        arch,
        compiler: compiler.to_string(),
        description,
        modules: Mutex::new(HashMap::new()),
        funcs: FuncCache::default(),
        sync_each: std::env::var("WGLLM_NATIVE_SYNC").is_ok_and(|v| v == "1"),
    })
}

/// The backends of every CUDA device (empty when absent; see [`absent_reason`]).
pub fn devices() -> Vec<NativeBackend> {
    probe()
        .unwrap_or_default()
        .into_iter()
        .map(|r| NativeBackend::new(r as Arc<dyn Runtime>))
        .collect()
}

/// Why this build's `cuda` backend has no device here, if it has none.
pub fn absent_reason() -> Option<String> {
    probe().err()
}

impl CudaRuntime {
    fn bind(&self) -> Result<()> {
        check(&self.name, "cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    /// Compiles `m` to a CUBIN for this device's arch (or takes it from the disk cache).
    pub fn compile(&self, m: &ModuleKey) -> Result<Vec<u8>> {
        compile_cubin(&self.name, m, &self.arch, &self.compiler)
    }
}

/// NVRTC: the prelude + hip/ source of `m` -> a CUBIN for `arch` (`sm_90`). Needs no GPU.
pub fn compile_cubin(device: &str, m: &ModuleKey, arch: &str, compiler: &str) -> Result<Vec<u8>> {
    let label = m.label();
    let text = source::text(m, true).map_err(|e| Error::Device {
        device: device.into(),
        call: "kernel source".into(),
        detail: e,
    })?;
    let key = source::key(&text, arch, compiler);
    if let Some(img) = source::cache_get(&key, "cubin") {
        return Ok(img);
    }
    let src = CString::new(text).map_err(|_| Error::Other(format!("{label}: NUL in kernel source")))?;
    let name = CString::new(m.file).unwrap();
    let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
    nvrtc_check(device, &format!("nvrtcCreateProgram({label})"), unsafe {
        nvrtc::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let opts: Vec<CString> = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "-lineinfo".into(),
    ]
    .into_iter()
    .map(|o| CString::new(o).unwrap())
    .collect();
    let optp: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let r = unsafe { nvrtc::nvrtcCompileProgram(prog, optp.len() as i32, optp.as_ptr()) };
    let log = unsafe {
        let mut n = 0usize;
        nvrtc::nvrtcGetProgramLogSize(prog, &mut n);
        let mut b = vec![0u8; n.max(1)];
        nvrtc::nvrtcGetProgramLog(prog, b.as_mut_ptr() as *mut std::ffi::c_char);
        String::from_utf8_lossy(&b).trim_end_matches('\0').trim().to_string()
    };
    let result = (|| {
        if r != nvrtc::nvrtcResult::NVRTC_SUCCESS {
            return Err(Error::Device {
                device: device.into(),
                call: format!("nvrtcCompileProgram({label}, {arch})"),
                detail: format!("{r:?}\n{log}"),
            });
        }
        let mut n = 0usize;
        nvrtc_check(device, &format!("nvrtcGetCUBINSize({label})"), unsafe {
            nvrtc::nvrtcGetCUBINSize(prog, &mut n)
        })?;
        let mut img = vec![0u8; n];
        nvrtc_check(device, &format!("nvrtcGetCUBIN({label})"), unsafe {
            nvrtc::nvrtcGetCUBIN(prog, img.as_mut_ptr() as *mut std::ffi::c_char)
        })?;
        Ok(img)
    })();
    unsafe { nvrtc::nvrtcDestroyProgram(&mut prog) };
    let img = result?;
    source::cache_put(&key, "cubin", &img);
    Ok(img)
}

impl Runtime for CudaRuntime {
    fn name(&self) -> &str {
        &self.name
    }

    fn wave(&self) -> u32 {
        32
    }

    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.bind()?;
        let mut p: sys::CUdeviceptr = 0;
        check(&self.name, &format!("cuMemAlloc({bytes} bytes)"), unsafe {
            sys::cuMemAlloc_v2(&mut p, bytes)
        })?;
        Ok(p)
    }

    fn free(&self, ptr: u64) {
        if self.bind().is_ok() {
            unsafe { sys::cuMemFree_v2(ptr) };
        }
    }

    fn upload(&self, ptr: u64, bytes: &[u8]) -> Result<()> {
        self.bind()?;
        check(&self.name, "cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(ptr, bytes.as_ptr() as *const c_void, bytes.len())
        })
    }

    fn download(&self, ptr: u64, out: &mut [u8]) -> Result<()> {
        self.bind()?;
        check(&self.name, "cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, ptr, out.len())
        })
    }

    fn function(&self, m: &ModuleKey, entry: &'static str) -> Result<Func> {
        if let Some(f) = self.funcs.lock().unwrap().get(m).and_then(|e| e.get(entry)) {
            return Ok(*f);
        }
        self.bind()?;
        let module = {
            let mut mods = self.modules.lock().unwrap();
            match mods.get(m) {
                Some(&md) => md as sys::CUmodule,
                None => {
                    let img = self.compile(m)?;
                    let mut md: sys::CUmodule = std::ptr::null_mut();
                    check(&self.name, &format!("cuModuleLoadData({})", m.label()), unsafe {
                        sys::cuModuleLoadData(&mut md, img.as_ptr() as *const c_void)
                    })?;
                    mods.insert(m.clone(), md as usize);
                    md
                }
            }
        };
        let cname = CString::new(entry).unwrap();
        let mut f: sys::CUfunction = std::ptr::null_mut();
        check(
            &self.name,
            &format!("cuModuleGetFunction({entry} in {})", m.label()),
            unsafe { sys::cuModuleGetFunction(&mut f, module, cname.as_ptr()) },
        )?;
        let f = Func(f as usize as u64);
        self.funcs
            .lock()
            .unwrap()
            .entry(m.clone())
            .or_default()
            .insert(entry, f);
        Ok(f)
    }

    fn launch(&self, f: Func, l: &Launch) -> Result<()> {
        self.bind()?;
        let grid = l.grid;
        let mut slots = arg_slots(&l.args);
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut c_void).collect();
        let r = unsafe {
            sys::cuLaunchKernel(
                f.0 as usize as sys::CUfunction,
                grid.0,
                grid.1,
                1,
                native::plan::BLOCK,
                1,
                1,
                0,
                std::ptr::null_mut(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return check(&self.name, &format!("cuLaunchKernel({})", launch_label(l)), r);
        }
        if self.sync_each {
            check(
                &self.name,
                &format!("cuCtxSynchronize(after {})", launch_label(l)),
                unsafe { sys::cuCtxSynchronize() },
            )?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.bind()?;
        check(&self.name, "cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                    let img = compile_cubin("cuda/test", &l.module, "sm_90", &format!("nvrtc {maj}.{min}")).unwrap();
                    assert!(!img.is_empty());
                }
            }
        }
        eprintln!("{} modules compiled", seen.len());
    }
}
