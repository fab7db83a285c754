//! Compiling kernels: the generated WGSL of a `KernelKey` (kernel.rs) from this device's sources,
//! built with or without wgpu's runtime checks as `Tuning::checked` says, into a pipeline and its
//! bind group layout, cached by key for the device's lifetime.
use super::WgpuBackend;
use crate::backend::wgpu::kernel::{self, KernelKey};
use crate::backend::wgpu::portability::{self, KernelSource};
use crate::error::{Error, Result};
use std::sync::Arc;

pub(crate) struct Pipeline {
    pub(super) pipeline: wgpu::ComputePipeline,
    pub(super) layout: wgpu::BindGroupLayout,
    /// the full WGSL it was built from (portability.rs translates it for Metal and DX12)
    wgsl: String,
}

impl WgpuBackend {
    pub(super) fn pipeline(&self, key: &KernelKey, body: &str, consts: &[(&str, String)]) -> Result<Arc<Pipeline>> {
        if let Some(p) = self.pipelines.lock().unwrap().get(key) {
            return Ok(p.clone());
        }
        let label = key.label();
        if let Some(reason) = portability::refusal(self.info.backend, key.entry) {
            return Err(Error::Unsupported {
                op: label,
                device: self.name.clone(),
                reason,
            });
        }
        let src = self.kernel_source(key, body, consts);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(src.as_str().into()),
        };
        let module = if self.tuning.checked(key.entry) {
            self.device.create_shader_module(desc)
        } else {
            // SAFETY: only this crate's own kernels come here (tuning.rs `UNCHECKED` unless
            // WGLLM_SHADER_CHECKS=0; from a shader directory, its copies of them: kernel work, where
            // WGLLM_SHADER_CHECKS=1 is the careful choice): every loop has a bound, rows and
            // elements are guarded against Params' m / n / k in the kernel (the harness's ragged
            // shapes pass with the checks off), and the device keeps the driver's robust buffer
            // access where it has it.
            unsafe {
                self.device
                    .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            }
        };
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: None,
            },
            count: None,
        }];
        for (k, b) in key.bindings.iter().enumerate() {
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: k as u32 + 1,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage {
                        read_only: matches!(b.access, kernel::Access::Read | kernel::Access::Read4),
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            });
        }
        let layout = self.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(&label),
            entries: &entries,
        });
        let pl = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(&label),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&label),
            layout: Some(&pl),
            module: &module,
            entry_point: Some(key.entry),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(self.device_error(&format!("compile kernel {label}"), e.to_string()));
        }
        let p = Arc::new(Pipeline {
            pipeline,
            layout,
            wgsl: src,
        });
        self.pipelines.lock().unwrap().insert(key.clone(), p.clone());
        Ok(p)
    }

    /// The full WGSL of a kernel on this device's sources. naga 30 gates subgroup builtins on the
    /// device's capabilities (it rejects `enable subgroups;`); a body's own leading `enable`
    /// lines (f16, cooperative matrices: linear_coop) go first in the module.
    pub(crate) fn kernel_source(&self, key: &KernelKey, body: &str, consts: &[(&str, String)]) -> String {
        kernel_source_with(self.source("common.wgsl"), key, body, consts)
    }

    /// Every kernel specialization this device has compiled so far, with its full WGSL.
    pub fn kernel_sources(&self) -> Vec<KernelSource> {
        let mut v: Vec<KernelSource> = (self.pipelines.lock().unwrap().iter())
            .map(|(k, p)| KernelSource {
                label: k.label(),
                entry: k.entry.to_string(),
                wgsl: p.wgsl.clone(),
            })
            .collect();
        v.sort_by(|a, b| a.label.cmp(&b.label));
        v
    }
}

/// `WgpuBackend::kernel_source` over `common` (the text of shaders/common.wgsl).
pub(crate) fn kernel_source_with(common: &str, key: &KernelKey, body: &str, consts: &[(&str, String)]) -> String {
    let mut enables = vec![];
    let mut rest = body;
    while let Some(line) = rest.strip_prefix("enable ") {
        let (e, tail) = line.split_once('\n').unwrap_or((line, ""));
        enables.push(e.trim_end_matches(';').trim());
        rest = tail;
    }
    kernel::generate_with(common, key, rest, consts, &enables)
}
