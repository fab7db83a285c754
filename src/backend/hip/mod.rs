//! The `hip` backend (feature `hip`): the hip/ kernels on AMD GPUs through ROCm.
//!
//! libamdhip64 and libhiprtc are loaded at run time (cubecl-hip-sys resolves them through
//! libloading, from ROCM_PATH / HIP_PATH or the loader's path), so this builds on machines with
//! no ROCm. Without the runtime, or with no device (`hipGetDeviceCount` answers hipErrorNoDevice,
//! 100, and a count of 0), the backend is absent with the reason ([`probe`]) and every case on it
//! counts as skipped, never passed. Kernels are compiled by hiprtc for the device's gfx arch
//! (`gcnArchName`, e.g. gfx1100 or gfx1151), cached in memory and on disk by (source hash, arch,
//! HIP version). Memory comes from hipMalloc: device-only, never managed memory, no host
//! fallback. Every runtime call is checked and turned into `Error::Device` naming the call.
use super::native::{
    self, arg_slots, launch_label, plan::Launch, source, Func, FuncCache, ModuleKey, NativeBackend, Runtime,
};
use crate::error::{Error, Result};
use cubecl_hip_sys as hip;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};

pub struct HipRuntime {
    name: String,
    ordinal: i32,
    /// `gfx1100`, or the full target id (`gfx90a:sramecc+:xnack-`)
    pub arch: String,
    pub compiler: String,
    pub description: String,
    wave: u32,
    modules: Mutex<HashMap<ModuleKey, usize>>,
    funcs: FuncCache,
    sync_each: bool,
}

// Module and function handles are runtime handles, valid on any thread after hipSetDevice.
unsafe impl Send for HipRuntime {}
unsafe impl Sync for HipRuntime {}

fn err_text(r: hip::hipError_t) -> String {
    let name = unsafe { hip::hipGetErrorName(r) };
    if name.is_null() {
        return format!("hipError {r}");
    }
    format!("{} ({r})", unsafe { CStr::from_ptr(name) }.to_string_lossy())
}

fn check(device: &str, call: &str, r: hip::hipError_t) -> Result<()> {
    if r == hip::hipError_t_hipSuccess {
        Ok(())
    } else {
        Err(Error::Device {
            device: device.to_string(),
            call: call.to_string(),
            detail: err_text(r),
        })
    }
}

fn rtc_check(device: &str, call: &str, r: hip::hiprtcResult) -> Result<()> {
    if r == hip::hiprtcResult_HIPRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Device {
            device: device.to_string(),
            call: call.to_string(),
            detail: format!("hiprtcResult {r}"),
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
    let mut name = format!("hip/{}", slug(&adapter));
    if count > 1 {
        name = format!("{name}-{ordinal}");
    }
    let description = format!(
        "{adapter}, {arch}, {} CUs, {} GiB, {compiler}, wave{wave}",
        props.multiProcessorCount,
        props.totalGlobalMem >> 30
    );
    Ok(HipRuntime {
        name,
        ordinal,
        arch,
        compiler: compiler.to_string(),
        description,
        wave: wave.max(1) as u32,
        modules: Mutex::new(HashMap::new()),
        funcs: FuncCache::default(),
        sync_each: std::env::var("WGLLM_NATIVE_SYNC").is_ok_and(|v| v == "1"),
    })
}

/// The backends of every ROCm device (empty when absent; see [`absent_reason`]).
pub fn devices() -> Vec<NativeBackend> {
    probe()
        .unwrap_or_default()
        .into_iter()
        .map(|r| NativeBackend::new(r as Arc<dyn Runtime>))
        .collect()
}

/// Why this build's `hip` backend has no device here, if it has none.
pub fn absent_reason() -> Option<String> {
    probe().err()
}

impl HipRuntime {
    fn bind(&self) -> Result<()> {
        check(&self.name, "hipSetDevice", unsafe { hip::hipSetDevice(self.ordinal) })
    }

    /// hiprtc: the hip/ source of `m` -> a code object for this device's arch (or the disk cache's).
    pub fn compile(&self, m: &ModuleKey) -> Result<Vec<u8>> {
        let label = m.label();
        let dev = self.name.as_str();
        let text = source::text(m, false).map_err(|e| Error::Device {
            device: dev.into(),
            call: "kernel source".into(),
            detail: e,
        })?;
        let key = source::key(&text, &self.arch, &self.compiler);
        if let Some(img) = source::cache_get(&key, "hsaco") {
            return Ok(img);
        }
        let src = CString::new(text).map_err(|_| Error::Other(format!("{label}: NUL in kernel source")))?;
        let name = CString::new(m.file).unwrap();
        let mut prog: hip::hiprtcProgram = std::ptr::null_mut();
        rtc_check(dev, &format!("hiprtcCreateProgram({label})"), unsafe {
            hip::hiprtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        })?;
        let opts: Vec<CString> = [
            format!("--offload-arch={}", self.arch),
            "-O3".into(),
            "-std=c++17".into(),
        ]
        .into_iter()
        .map(|o| CString::new(o).unwrap())
        .collect();
        let optp: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let r = unsafe { hip::hiprtcCompileProgram(prog, optp.len() as i32, optp.as_ptr()) };
        let log = unsafe {
            let mut n = 0usize;
            hip::hiprtcGetProgramLogSize(prog, &mut n);
            let mut b = vec![0u8; n.max(1)];
            hip::hiprtcGetProgramLog(prog, b.as_mut_ptr() as *mut std::ffi::c_char);
            String::from_utf8_lossy(&b).trim_end_matches('\0').trim().to_string()
        };
        let result = (|| {
            if r != hip::hiprtcResult_HIPRTC_SUCCESS {
                return Err(Error::Device {
                    device: dev.into(),
                    call: format!("hiprtcCompileProgram({label}, {})", self.arch),
                    detail: format!("hiprtcResult {r}\n{log}"),
                });
            }
            let mut n = 0usize;
            rtc_check(dev, &format!("hiprtcGetCodeSize({label})"), unsafe {
                hip::hiprtcGetCodeSize(prog, &mut n)
            })?;
            let mut img = vec![0u8; n];
            rtc_check(dev, &format!("hiprtcGetCode({label})"), unsafe {
                hip::hiprtcGetCode(prog, img.as_mut_ptr() as *mut std::ffi::c_char)
            })?;
            Ok(img)
        })();
        unsafe { hip::hiprtcDestroyProgram(&mut prog) };
        let img = result?;
        source::cache_put(&key, "hsaco", &img);
        Ok(img)
    }
}

impl Runtime for HipRuntime {
    fn name(&self) -> &str {
        &self.name
    }

    fn wave(&self) -> u32 {
        self.wave
    }

    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.bind()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        check(&self.name, &format!("hipMalloc({bytes} bytes)"), unsafe {
            hip::hipMalloc(&mut p, bytes)
        })?;
        Ok(p as usize as u64)
    }

    fn free(&self, ptr: u64) {
        if self.bind().is_ok() {
            unsafe { hip::hipFree(ptr as usize as *mut c_void) };
        }
    }

    fn upload(&self, ptr: u64, bytes: &[u8]) -> Result<()> {
        self.bind()?;
        check(&self.name, "hipMemcpyHtoD", unsafe {
            hip::hipMemcpyHtoD(
                ptr as usize as hip::hipDeviceptr_t,
                bytes.as_ptr() as *const c_void,
                bytes.len(),
            )
        })
    }

    fn download(&self, ptr: u64, out: &mut [u8]) -> Result<()> {
        self.bind()?;
        check(&self.name, "hipMemcpyDtoH", unsafe {
            hip::hipMemcpyDtoH(
                out.as_mut_ptr() as *mut c_void,
                ptr as usize as hip::hipDeviceptr_t,
                out.len(),
            )
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
                Some(&md) => md as hip::hipModule_t,
                None => {
                    let img = self.compile(m)?;
                    let mut md: hip::hipModule_t = std::ptr::null_mut();
                    check(&self.name, &format!("hipModuleLoadData({})", m.label()), unsafe {
                        hip::hipModuleLoadData(&mut md, img.as_ptr() as *const c_void)
                    })?;
                    mods.insert(m.clone(), md as usize);
                    md
                }
            }
        };
        let cname = CString::new(entry).unwrap();
        let mut f: hip::hipFunction_t = std::ptr::null_mut();
        check(
            &self.name,
            &format!("hipModuleGetFunction({entry} in {})", m.label()),
            unsafe { hip::hipModuleGetFunction(&mut f, module, cname.as_ptr()) },
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
            hip::hipModuleLaunchKernel(
                f.0 as usize as hip::hipFunction_t,
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
        if r != hip::hipError_t_hipSuccess {
            return check(&self.name, &format!("hipModuleLaunchKernel({})", launch_label(l)), r);
        }
        if self.sync_each {
            check(
                &self.name,
                &format!("hipDeviceSynchronize(after {})", launch_label(l)),
                unsafe { hip::hipDeviceSynchronize() },
            )?;
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.bind()?;
        check(&self.name, "hipDeviceSynchronize", unsafe {
            hip::hipDeviceSynchronize()
        })
    }
}
