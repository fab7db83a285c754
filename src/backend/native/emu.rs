//! Test-only: the hip/ kernels compiled for the host (clang++ with emu_prelude.h) and run on CPU
//! threads behind the same `NativeBackend` and plan as `cuda` and `hip`. It checks the kernels'
//! logic, the dtype substitutions and the launch plans against the CPU reference on a machine
//! with no GPU (CI); what it cannot check is the device compilers and real wave timing.
use super::{plan::Launch, source, with_params, Func, FuncCache, ModuleKey, NativeBackend, Runtime};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

const PRELUDE: &str = include_str!("emu_prelude.h");

type LaunchFn = unsafe extern "C" fn(u32, u32, *mut *mut c_void);

pub struct EmuRuntime {
    cxx: String,
    dir: std::path::PathBuf,
    libs: Mutex<HashMap<ModuleKey, libloading::Library>>,
    funcs: FuncCache,
    allocs: Mutex<HashMap<u64, Box<[u64]>>>,
    /// kernels keep __shared__ arrays in statics: one launch at a time
    launching: Mutex<()>,
}

impl EmuRuntime {
    /// None when no C++20 compiler is found (`WGLLM_EMU_CXX`, else clang++-19, clang++).
    pub fn new() -> Option<EmuRuntime> {
        let cands: Vec<String> = std::env::var("WGLLM_EMU_CXX")
            .map(|c| vec![c])
            .unwrap_or_else(|_| vec!["clang++-19".into(), "clang++".into()]);
        let cxx = cands.into_iter().find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })?;
        let dir = std::env::temp_dir().join(format!("wgllm-emu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        Some(EmuRuntime {
            cxx,
            dir,
            libs: Mutex::default(),
            funcs: FuncCache::default(),
            allocs: Mutex::default(),
            launching: Mutex::new(()),
        })
    }

    pub fn backend(self) -> NativeBackend {
        NativeBackend::new(Arc::new(self))
    }

    fn compile(&self, m: &ModuleKey) -> Result<libloading::Library> {
        let text = source::text(m, false).map_err(Error::Other)?;
        let key = source::key(&text, "host", &self.cxx);
        let so = self.dir.join(format!("{key}.so"));
        if !so.exists() {
            let mut src = format!("{PRELUDE}\n{text}\n");
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("WG_KERNEL void ") {
                    let name = rest.split('(').next().unwrap_or("");
                    src.push_str(&format!("WG_EMU_ENTRY({name})\n"));
                }
            }
            let cpp = self.dir.join(format!("{key}.cpp"));
            std::fs::write(&cpp, src).map_err(|e| Error::Other(e.to_string()))?;
            let out = std::process::Command::new(&self.cxx)
                .args(["-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o"])
                .arg(&so)
                .arg(&cpp)
                .output()
                .map_err(|e| Error::Other(format!("{}: {e}", self.cxx)))?;
            if !out.status.success() {
                return Err(Error::Device {
                    device: "emu".into(),
                    call: format!("{} ({})", self.cxx, m.label()),
                    detail: String::from_utf8_lossy(&out.stderr).into(),
                });
            }
        }
        unsafe { libloading::Library::new(&so) }.map_err(|e| Error::Other(format!("dlopen {}: {e}", so.display())))
    }
}

impl Drop for EmuRuntime {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Runtime for EmuRuntime {
    fn name(&self) -> &str {
        "emu/host"
    }
    fn wave(&self) -> u32 {
        32
    }
    fn alloc(&self, bytes: usize) -> Result<u64> {
        // u64 words: 8-byte aligned, like any device allocation is (more so)
        let b: Box<[u64]> = vec![0u64; bytes.div_ceil(8)].into_boxed_slice();
        let p = b.as_ptr() as u64;
        self.allocs.lock().unwrap().insert(p, b);
        Ok(p)
    }
    fn free(&self, ptr: u64) {
        self.allocs.lock().unwrap().remove(&ptr);
    }
    fn upload(&self, ptr: u64, bytes: &[u8]) -> Result<()> {
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr as usize as *mut u8, bytes.len()) };
        Ok(())
    }
    fn download(&self, ptr: u64, out: &mut [u8]) -> Result<()> {
        unsafe { std::ptr::copy_nonoverlapping(ptr as usize as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }
    fn function(&self, m: &ModuleKey, entry: &'static str) -> Result<Func> {
        self.funcs.get_or_load(m, entry, || {
            let mut libs = self.libs.lock().unwrap();
            if !libs.contains_key(m) {
                let lib = self.compile(m)?;
                libs.insert(m.clone(), lib);
            }
            let sym = format!("wg_emu_launch_{entry}");
            let f: libloading::Symbol<LaunchFn> = unsafe { libs[m].get(sym.as_bytes()) }
                .map_err(|e| Error::Other(format!("{sym} in {}: {e}", m.label())))?;
            Ok(Func(*f as usize as u64))
        })
    }
    fn launch(&self, f: Func, l: &Launch) -> Result<()> {
        let _one = self.launching.lock().unwrap();
        let fp: LaunchFn = unsafe { std::mem::transmute(f.0 as usize) };
        with_params(&l.args, |p| unsafe { fp(l.grid.0, l.grid.1, p.as_mut_ptr()) });
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parity::{cases, run};

    /// Whether `c` is cheap to emulate: attention over a short cache with few query rows (paged:
    /// few query rows x heads x keys), a linear with under a million weights and 2^26
    /// multiply-adds, the gated delta rule over few tokens x key dims (the emulator pays a thread
    /// barrier per shuffle step).
    fn quick(c: &crate::parity::case::Case) -> bool {
        let s = |k: usize| &c.inputs[k].desc.shape;
        match c.op {
            crate::op::Op::Attention { n_past, .. } => n_past + s(0)[0] <= 64 && s(0)[0] * s(0)[1] <= 64,
            crate::op::Op::GatedAttention { n_past, .. } => n_past + s(0)[0] <= 64 && s(0)[0] * s(0)[1] <= 64,
            // query rows x heads x the table's keys under 2^20: the long prefills after a cached
            // prefix (wgpu's 512-key partitions) took 7-75 s each; the decode steps, the short
            // prefills and a 40-row chunk after 1020 keys keep every dtype of both ops
            crate::op::Op::PagedAttention { block_size, .. } => s(0)[0] * s(0)[1] * s(3)[1] * block_size <= 1 << 20,
            crate::op::Op::PagedGatedAttention { block_size, .. } => {
                s(0)[0] * s(0)[1] * s(7)[1] * block_size <= 1 << 20
            }
            // one block per row: the 1040-row cases take seconds each, the small ones cover every dtype
            crate::op::Op::RmsNormGated { .. } => c.inputs[0].desc.numel() / s(2)[0] <= 128,
            // (and under 2^26 multiply-adds: the wide GEMM's case of 1100 rows takes seconds each)
            crate::op::Op::Linear => s(1)[0] * s(1)[1] <= 1 << 20 && s(0)[0] * s(1)[0] * s(1)[1] <= 1 << 26,
            // the chunked form over small heads still crosses the chunk boundary (T 63..150)
            crate::op::Op::GdnChunked => s(0)[0] * s(5)[1] <= 150 * 32,
            // every token of gdn_batch is a recurrent step (shuffles each): decode batches of small heads
            crate::op::Op::GdnBatch => s(0)[0] * s(0)[1] <= 64 * 256,
            _ => true,
        }
    }

    /// Every parity case through the host-compiled hip/ kernels, against the CPU reference.
    /// `WGLLM_EMU_FILTER=S` keeps cases whose id contains S; `WGLLM_EMU_QUICK=1` (CI) only the
    /// cases that are cheap to emulate (every family and dtype combination still runs).
    #[test]
    #[ignore = "slow (compiles every module with clang++ and runs kernels on 256 host threads)"]
    fn hip_kernels_match_the_reference_on_the_host() {
        let Some(rt) = EmuRuntime::new() else {
            panic!("no clang++ for the host emulation")
        };
        let dev = rt.backend();
        let filter = std::env::var("WGLLM_EMU_FILTER").unwrap_or_default();
        let quick_only = std::env::var("WGLLM_EMU_QUICK").is_ok_and(|v| v == "1");
        let (mut pass, mut fail, mut skip) = (0, 0, 0);
        let mut failures = Vec::new();
        for c in cases::all() {
            if !c.id.contains(&filter) || (quick_only && !quick(&c)) {
                continue;
            }
            let t0 = std::time::Instant::now();
            let want = run::reference(&c);
            match run::check(&c, &dev, &want) {
                run::Outcome::Pass { .. } => pass += 1,
                run::Outcome::Skip { reason } => {
                    skip += 1;
                    eprintln!("skip {}: {reason}", c.id);
                }
                run::Outcome::Fail { error } => {
                    fail += 1;
                    eprintln!("FAIL {}: {error}", c.id);
                    failures.push(c.id.clone());
                }
            }
            if t0.elapsed().as_secs_f64() > 5.0 {
                eprintln!("slow: {} took {:.1}s", c.id, t0.elapsed().as_secs_f64());
            }
        }
        eprintln!("emu: {pass} passed, {fail} failed, {skip} skipped");
        assert!(failures.is_empty(), "{failures:?}");
        assert!(pass > 0);
    }
}
