//! "Any GPU", checked where we cannot run it. wgpu hands every kernel to naga, which writes MSL on
//! Metal and HLSL on DX12; a kernel naga cannot write for a target would fail there at pipeline
//! creation, on machines this project never sees. So every specialization a backend compiled is
//! also put through naga's own MSL and HLSL writers here, with each target's capabilities, and a
//! kernel that cannot be written is listed in `NOT_PORTABLE` with the reason; an adapter of that
//! target refuses it by name instead of failing in the driver.
use naga::back::{hlsl, msl};
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// A shading language wgpu translates WGSL into through naga.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Metal (macOS, iOS)
    Msl,
    /// DirectX 12 (Windows)
    Hlsl,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Msl, Target::Hlsl];

    pub fn name(self) -> &'static str {
        match self {
            Target::Msl => "MSL",
            Target::Hlsl => "HLSL",
        }
    }

    /// The target an adapter's backend compiles to, if it goes through one of these writers.
    pub fn of_backend(b: wgpu::Backend) -> Option<Target> {
        match b {
            wgpu::Backend::Metal => Some(Target::Msl),
            wgpu::Backend::Dx12 => Some(Target::Hlsl),
            _ => None,
        }
    }
}

/// Kernel entry points naga cannot write for a target, with the reason. Known failures are data:
/// `check` fails on a kernel that fails and is not listed, and on a listed one that now translates.
pub const NOT_PORTABLE: &[(&str, Target, &str)] = &[(
    "linear_coop",
    Target::Hlsl,
    "naga's HLSL writer has no cooperative matrices (nor does wgpu offer them on DX12)",
)];

/// The reason `entry` is refused on an adapter whose backend is `b`, if it is.
pub fn refusal(b: wgpu::Backend, entry: &str) -> Option<String> {
    let t = Target::of_backend(b)?;
    NOT_PORTABLE
        .iter()
        .find(|(e, target, _)| *e == entry && *target == t)
        .map(|(_, t, why)| format!("naga cannot write kernel {entry} as {}: {why}", t.name()))
}

/// Writes `src`'s entry point `entry` in `target`'s language; the error says why not.
pub fn translate(src: &str, entry: &str, target: Target) -> Result<String, String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| format!("WGSL: {}", e.emit_to_string(src)))?;
    let caps = match target {
        Target::Msl => msl::supported_capabilities(),
        Target::Hlsl => hlsl::supported_capabilities(),
    };
    // the validator needs the subgroup stages and operations the kernels use; naga's writers
    // check those themselves
    let caps = caps | Capabilities::SUBGROUP;
    let info = Validator::new(ValidationFlags::all(), caps)
        .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
        .subgroup_operations(naga::valid::SubgroupOperationSet::all())
        .validate(&module)
        .map_err(|e| format!("validation for {}: {}", target.name(), e.emit_to_string(src)))?;
    let stage = (naga::ShaderStage::Compute, entry.to_string());
    match target {
        Target::Msl => {
            // the newest language version wgpu's Metal backend asks for
            let options = msl::Options {
                lang_version: (3, 2),
                ..Default::default()
            };
            let pipeline = msl::PipelineOptions {
                entry_point: Some(stage),
                ..Default::default()
            };
            msl::write_string(&module, &info, &options, &pipeline)
                .map(|(s, _)| s)
                .map_err(|e| format!("{e}"))
        }
        Target::Hlsl => {
            // 6.2 is the first shader model with native 16-bit types (f16 kernels)
            let options = hlsl::Options {
                shader_model: hlsl::ShaderModel::V6_2,
                ..Default::default()
            };
            let pipeline = hlsl::PipelineOptions {
                entry_point: Some(stage),
            };
            let mut out = String::new();
            let mut w = hlsl::Writer::new(&mut out, &options, &pipeline);
            w.write(&module, &info, None).map_err(|e| format!("{e}"))?;
            drop(w);
            Ok(out)
        }
    }
}

/// One compiled kernel specialization: its label (`{entry}_{dtypes}[_{variant}]`), entry point
/// and full WGSL.
#[derive(Clone, Debug)]
pub struct KernelSource {
    pub label: String,
    pub entry: String,
    pub wgsl: String,
}

/// What `check` found over a set of specializations.
#[derive(Debug, Default)]
pub struct Report {
    pub kernels: usize,
    /// per target in `Target::ALL` order: how many translated
    pub translated: [usize; 2],
    /// (label, target, reason) of every specialization that did not translate
    pub failed: Vec<(String, Target, String)>,
    /// failures not listed in NOT_PORTABLE, and listed entries that translated
    pub unexpected: Vec<String>,
}

impl Report {
    /// `naga: 412 kernel specializations; MSL 412 translated, HLSL 410; not translated: ...`
    pub fn summary(&self) -> String {
        let mut s = format!(
            "naga: {} kernel specializations; {} {} translated, {} {}",
            self.kernels,
            Target::ALL[0].name(),
            self.translated[0],
            Target::ALL[1].name(),
            self.translated[1]
        );
        if self.failed.is_empty() {
            s.push_str("; every one translated");
        }
        for (label, t, why) in &self.failed {
            let why = why.lines().next().unwrap_or("");
            s.push_str(&format!("\n  not translated: {label} to {}: {why}", t.name()));
        }
        for u in &self.unexpected {
            s.push_str(&format!("\n  UNEXPECTED: {u}"));
        }
        s
    }

    /// Fails on unexpected results and on a check that saw no kernel at all.
    pub fn ok(&self) -> bool {
        self.kernels > 0 && self.unexpected.is_empty()
    }
}

/// Translates every specialization to every target and holds the results against NOT_PORTABLE.
pub fn check(kernels: &[KernelSource]) -> Report {
    let mut r = Report {
        kernels: kernels.len(),
        ..Default::default()
    };
    for k in kernels {
        for (i, t) in Target::ALL.into_iter().enumerate() {
            let listed = NOT_PORTABLE.iter().any(|(e, lt, _)| *e == k.entry && *lt == t);
            match translate(&k.wgsl, &k.entry, t) {
                Ok(_) => {
                    r.translated[i] += 1;
                    if listed {
                        r.unexpected.push(format!(
                            "{} translates to {} but NOT_PORTABLE lists it: drop the entry",
                            k.label,
                            t.name()
                        ));
                    }
                }
                Err(why) => {
                    if !listed {
                        let first = why.lines().next().unwrap_or("").to_string();
                        r.unexpected
                            .push(format!("{} does not translate to {}: {first}", k.label, t.name()));
                    }
                    r.failed.push((k.label.clone(), t, why));
                }
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
        @compute @workgroup_size(64) fn k(@builtin(global_invocation_id) g: vec3<u32>) { y[g.x] = 2.0 * y[g.x]; }";

    #[test]
    fn a_plain_kernel_translates_to_both() {
        for t in Target::ALL {
            let out = translate(TINY, "k", t).unwrap();
            assert!(out.contains('k'), "{}: {out}", t.name());
        }
    }

    #[test]
    fn a_broken_kernel_is_reported_not_passed() {
        let k = KernelSource {
            label: "k_bad".into(),
            entry: "k".into(),
            wgsl: TINY.replace("2.0 *", "2.0 * undefined_name *"),
        };
        let r = check(&[k]);
        assert_eq!(r.translated, [0, 0]);
        assert_eq!(r.failed.len(), 2);
        assert!(!r.ok(), "{}", r.summary());
        assert!(!check(&[]).ok(), "zero kernels must not pass");
    }

    #[test]
    fn a_missing_entry_point_fails() {
        for t in Target::ALL {
            assert!(translate(TINY, "nope", t).is_err());
        }
    }
}
