//! tests/ops.rs's teeth: how a tooth puts its bug in (a patched copy of shaders/, or an operand
//! re-declared), and `bite`, which runs a case with it and passes when the case is red as expected.
use libtest_mimic::{Completion, Failed};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::Backend;
use wgllm::parity::case::Case;
use wgllm::parity::run;
use wgllm::tensor::Tensor;

mod list;
mod paged;
pub use list::teeth;
pub use paged::PagedTeeth;

/// How a tooth puts its bug in.
#[derive(Clone)]
pub enum Tooth {
    /// A kernel source patched (the adapters opened on the patched copy).
    Patched(Arc<Patched>),
    /// gated_attention run with its output tensor re-declared with the input's dtype.
    OutDtypeFromInput,
}

impl Tooth {
    pub fn tag(&self) -> &'static str {
        match self {
            Tooth::Patched(p) => p.tag,
            Tooth::OutDtypeFromInput => "out_dtype_from_input",
        }
    }
}

/// One patch of one file of shaders/, and the adapters opened on the patched copy (once, on the
/// first trial that needs them).
pub struct Patched {
    pub tag: &'static str,
    file: &'static str,
    from: &'static str,
    to: &'static str,
    devices: OnceLock<Result<Vec<Arc<WgpuBackend>>, String>>,
}

impl Patched {
    pub fn new(tag: &'static str, file: &'static str, from: &'static str, to: &'static str) -> Patched {
        Patched {
            tag,
            file,
            from,
            to,
            devices: OnceLock::new(),
        }
    }

    /// The patched adapter named `name`.
    pub fn device(&self, name: &str) -> Result<Arc<WgpuBackend>, String> {
        let devs = self
            .devices
            .get_or_init(|| self.open())
            .as_ref()
            .map_err(Clone::clone)?;
        devs.iter()
            .find(|d| d.name() == name)
            .cloned()
            .ok_or_else(|| format!("no adapter {name} opened on the patched shaders"))
    }

    /// Copies shaders/ into a fresh directory, patches `file` there, opens every adapter on it
    /// (the sources are read while opening, so the directory goes right after).
    fn open(&self) -> Result<Vec<Arc<WgpuBackend>>, String> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
        let dir = std::env::temp_dir().join(format!("wgllm-teeth-{}-{}", std::process::id(), self.tag));
        let e = |what: &str, p: &Path, err: std::io::Error| format!("{what} {}: {err}", p.display());
        std::fs::create_dir_all(&dir).map_err(|err| e("create", &dir, err))?;
        for entry in std::fs::read_dir(&src).map_err(|err| e("read", &src, err))? {
            let p = entry.map_err(|err| e("read", &src, err))?.path();
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).map_err(|err| e("copy", &p, err))?;
        }
        let target = dir.join(self.file);
        let text = std::fs::read_to_string(&target).map_err(|err| e("read", &target, err))?;
        let result = if !text.contains(self.from) {
            Err(format!(
                "patch target `{}` not found in shaders/{}: the tooth no longer bites; aim it again",
                self.from, self.file
            ))
        } else {
            std::fs::write(&target, text.replace(self.from, self.to)).map_err(|err| e("write", &target, err))?;
            let devs = WgpuBackend::all_with_shader_dir(&dir);
            match devs.is_empty() {
                true => Err(format!("no adapter opened on {}", dir.display())),
                false => Ok(devs.into_iter().map(Arc::new).collect()),
            }
        };
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}

/// Runs `case` with the tooth's bug in on (the adapter named like) `dev`; passes when it is red
/// as `expect_red` says.
pub fn bite(case: &Case, dev: &Arc<WgpuBackend>, tooth: &Tooth, expect_red: bool) -> Result<Completion, Failed> {
    let support = wgllm::parity::with_invariance(dev.as_ref(), case.invariance, || dev.supports(&case.desc()));
    if let wgllm::backend::Support::No(r) = support {
        return Ok(Completion::ignored_with(format!("unsupported: {r}")));
    }
    let want = run::reference(case);
    let verdict = match tooth {
        Tooth::Patched(p) => run::check(case, p.device(&dev.name())?.as_ref(), &want),
        Tooth::OutDtypeFromInput => {
            let want = want.map_err(Failed::from)?;
            let run = |i: &[&Tensor], o: &[&Tensor]| {
                let out = Tensor {
                    dtype: i[0].dtype,
                    ..o[0].clone()
                };
                let outs: Vec<&Tensor> = std::iter::once(&out).chain(o[1..].iter().copied()).collect();
                dev.run(&case.op, i, &outs)
            };
            match run::execute_with(case, dev.as_ref(), &run) {
                Ok(got) => run::compare_outputs(case, &got, &want),
                Err(error) => run::Outcome::Fail { error },
            }
        }
    };
    match (verdict, expect_red) {
        (run::Outcome::Fail { error }, true) => {
            println!("    red as expected: {error}");
            Ok(Completion::Completed)
        }
        (run::Outcome::Pass { .. }, false) => Ok(Completion::Completed),
        (run::Outcome::Pass { nmse, .. }, true) => Err(Failed::from(format!(
            "passed with the bug in (nmse {nmse:.2e}): this case has no teeth"
        ))),
        (run::Outcome::Skip { reason }, _) => Ok(Completion::ignored_with(reason)),
        (run::Outcome::Fail { error }, false) => Err(Failed::from(format!(
            "expected green (the bug should not reach this case), got red: {error}"
        ))),
    }
}
