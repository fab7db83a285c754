//! Adapter discovery and device creation: each adapter on Vulkan / Metal / DX12 opened as one
//! `WgpuBackend`, its capabilities, tuning and kernel sources settled once, here.
use super::recorder::{Recorder, SLOT, SLOTS};
use super::{Caps, WgpuBackend};
use crate::backend::wgpu::shaders::Sources;
use crate::backend::wgpu::tuning::Tuning;
use crate::error::{Error, Result};
use std::path::Path;
use std::sync::{Arc, Mutex};

fn slug(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name).trim().to_ascii_lowercase();
    let s: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

impl WgpuBackend {
    /// Every adapter on Vulkan / Metal / DX12, each opened as a device with its tuning
    /// (`Tuning::for_adapter`: per-adapter defaults and the documented environment variables).
    /// Adapters that fail to open are logged (warn) and left out.
    pub fn all() -> Vec<WgpuBackend> {
        Self::all_tuned(&|_| {})
    }

    /// `all`, every adapter compiling the WGSL read from `dir` (a copy of shaders/, perhaps
    /// patched) instead of the embedded sources: kernel work without rebuilding, and tests that
    /// show a patched kernel turns parity cases red. The files are read once, while opening.
    pub fn all_with_shader_dir(dir: &Path) -> Vec<WgpuBackend> {
        Self::all_tuned(&|t| t.shader_dir = Some(dir.to_path_buf()))
    }

    /// `all`, with `adjust` applied to each adapter's tuning before it opens.
    pub fn all_tuned(adjust: &dyn Fn(&mut Tuning)) -> Vec<WgpuBackend> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(desc);
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
        let mut out: Vec<WgpuBackend> = Vec::new();
        for a in adapters {
            let info = a.get_info();
            let mut tuning = Tuning::for_adapter(&info);
            adjust(&mut tuning);
            match Self::open(a, tuning) {
                Ok(mut b) => {
                    if out.iter().any(|o| o.name == b.name) {
                        b.name = format!("{}-{}", b.name, out.len());
                    }
                    out.push(b)
                }
                Err(e) => log::warn!("skipping adapter {:?}: {e}", info.name),
            }
        }
        out
    }

    fn open(adapter: wgpu::Adapter, tuning: Tuning) -> Result<Self> {
        let info = adapter.get_info();
        let sources = match &tuning.shader_dir {
            Some(dir) => Sources::load(dir).map_err(Error::Other)?,
            None => Sources::embedded(),
        };
        let feats = adapter.features();
        let limits = adapter.limits();
        let mut want = wgpu::Features::empty();
        for f in [
            wgpu::Features::SHADER_F16,
            wgpu::Features::SUBGROUP,
            wgpu::Features::TIMESTAMP_QUERY,
        ] {
            if feats.contains(f) {
                want |= f;
            }
        }
        // Cooperative matrices (linear_coop's tensor-core tiles) are experimental in wgpu: asked for
        // only where the adapter has them with f16 T x T x T products and f32 sums (T = 16 as on
        // NVIDIA and AMD, else 8 as on Mesa's lavapipe), and subgroups of one fixed size (the
        // kernel's shape: 32 on NVIDIA, 8 on lavapipe).
        let coop = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        let props = adapter.cooperative_matrix_properties();
        let has = |t: u32| {
            props.iter().any(|p| {
                p.m_size == t
                    && p.n_size == t
                    && p.k_size == t
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == wgpu::CooperativeScalarType::F32
            })
        };
        let mut coop_tile = [16, 8].into_iter().find(|&t| has(t)).unwrap_or(0);
        if feats.contains(coop | wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP)
            && info.subgroup_min_size == info.subgroup_max_size
            && info.subgroup_min_size >= 8
            && coop_tile > 0
        {
            want |= coop;
        } else {
            coop_tile = 0;
        }
        let name = format!("wgpu/{}", slug(&info.name));
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some(&name),
            required_features: want,
            required_limits: limits.clone(),
            // SAFETY: the one experimental feature asked for is cooperative matrices, used only by
            // linear_coop (checked against the CPU reference by the parity cases and linear::sweep
            // on a device that has them).
            experimental_features: if want.contains(coop) {
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| Error::Device {
            device: name.clone(),
            call: "request_device".into(),
            detail: e.to_string(),
        })?;
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| sink.lock().unwrap().push(e.to_string())));
        let lost = errors.clone();
        device.set_device_lost_callback(move |reason, msg| {
            // dropping the device at exit is not a loss worth reporting
            if reason != wgpu::DeviceLostReason::Destroyed {
                lost.lock().unwrap().push(format!("{}: {reason:?}: {msg}", super::LOST));
            }
        });
        let caps = Caps {
            shader_f16: want.contains(wgpu::Features::SHADER_F16),
            subgroup: want.contains(wgpu::Features::SUBGROUP),
            subgroup_min: info.subgroup_min_size,
            subgroup_max: info.subgroup_max_size,
            timestamp_query: want.contains(wgpu::Features::TIMESTAMP_QUERY),
            cooperative_matrix: want.contains(coop),
            coop_tile,
            max_binding: limits.max_storage_buffer_binding_size,
            max_buffer: limits.max_buffer_size,
            max_workgroup_storage: limits.max_compute_workgroup_storage_size,
            max_invocations: limits.max_compute_invocations_per_workgroup,
            max_storage_buffers: limits.max_storage_buffers_per_shader_stage,
        };
        let arena = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("params-arena"),
            size: SLOT * SLOTS,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(WgpuBackend {
            name,
            info,
            caps,
            tuning,
            sources,
            device,
            queue,
            arena,
            pipelines: Mutex::default(),
            bind_groups: Mutex::default(),
            supported: Default::default(),
            next_id: Default::default(),
            reads: Mutex::default(),
            scratch: Mutex::default(),
            rec: Mutex::new(Recorder {
                profiler: None,
                encoder: None,
                pass: None,
                params: Vec::new(),
                slots: 0,
            }),
            op_lock: Mutex::default(),
            errors,
            dispatches: Default::default(),
            batch_invariant: Default::default(),
            last_submit: Default::default(),
        })
    }
}
