//! Adapter discovery, device creation, buffers, the pipeline cache and the dispatch recorder.
use super::kernel::{self, KernelKey};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::{numel, Storage, Tensor};
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the adapter offers that kernels care about.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Caps {
    pub shader_f16: bool,
    pub subgroup: bool,
    pub subgroup_min: u32,
    pub subgroup_max: u32,
    pub timestamp_query: bool,
    pub cooperative_matrix: bool,
    pub max_binding: u64,
    pub max_buffer: u64,
    pub max_workgroup_storage: u32,
    pub max_invocations: u32,
    /// Storage buffers one kernel may bind (a kernel with more tensors is refused by name).
    pub max_storage_buffers: u32,
}

pub struct WgpuStorage {
    pub buffer: wgpu::Buffer,
    /// Unique per allocation (never reused), so cached bind groups can key on it safely.
    pub id: u64,
}

impl Storage for WgpuStorage {
    fn capacity_bytes(&self) -> usize {
        self.buffer.size() as usize
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

const SLOT: u64 = 256;
const SLOTS: u64 = 2048;

struct Recorder {
    profiler: Option<super::profile::Profiler>,
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    params: Vec<u8>,
    slots: u64,
}

pub struct WgpuBackend {
    pub(super) name: String,
    pub info: wgpu::AdapterInfo,
    pub caps: Caps,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    arena: wgpu::Buffer,
    pipelines: Mutex<HashMap<KernelKey, Arc<Pipeline>>>,
    /// Bind groups by (kernel, tensor buffer ids); the params slot is a dynamic offset, so a decode
    /// step that reuses its buffers creates no bind groups after the first step.
    bind_groups: Mutex<HashMap<(KernelKey, Vec<u64>), wgpu::BindGroup>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Internal scratch buffers by name (e.g. argmax partials), grown on demand.
    scratch: Mutex<HashMap<&'static str, Tensor>>,
    rec: Mutex<Recorder>,
    /// Held while one op records its dispatches: an op of several dispatches that pass data through
    /// a scratch buffer (argmax partials, the gated delta rule's chunk prep) is never interleaved
    /// with another thread's op on the same device.
    pub(super) op_lock: Mutex<()>,
    errors: Arc<Mutex<Vec<String>>>,
    /// Dispatches recorded since creation (for tests and benchmarks).
    pub dispatches: std::sync::atomic::AtomicU64,
    /// Dispatches in the most recent submit.
    last_submit: std::sync::atomic::AtomicU64,
}

fn slug(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name).trim().to_ascii_lowercase();
    let s: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

impl WgpuBackend {
    /// Every adapter on Vulkan / Metal / DX12, each opened as a device. Adapters that fail to open
    /// are reported on stderr and left out.
    pub fn all() -> Vec<WgpuBackend> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(desc);
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
        let mut out: Vec<WgpuBackend> = Vec::new();
        for a in adapters {
            match Self::open(a) {
                Ok(mut b) => {
                    if out.iter().any(|o| o.name == b.name) {
                        b.name = format!("{}-{}", b.name, out.len());
                    }
                    out.push(b)
                }
                Err(e) => eprintln!("wgpu: skipping adapter: {e}"),
            }
        }
        out
    }

    fn open(adapter: wgpu::Adapter) -> Result<Self> {
        let info = adapter.get_info();
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
        let name = format!("wgpu/{}", slug(&info.name));
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some(&name),
            required_features: want,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
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
        let caps = Caps {
            shader_f16: want.contains(wgpu::Features::SHADER_F16),
            subgroup: want.contains(wgpu::Features::SUBGROUP),
            subgroup_min: info.subgroup_min_size,
            subgroup_max: info.subgroup_max_size,
            timestamp_query: want.contains(wgpu::Features::TIMESTAMP_QUERY),
            cooperative_matrix: feats.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
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
            device,
            queue,
            arena,
            pipelines: Mutex::default(),
            bind_groups: Mutex::default(),
            next_id: Default::default(),
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
            last_submit: Default::default(),
        })
    }

    fn device_error(&self, call: &str, detail: String) -> Error {
        Error::Device {
            device: self.name.clone(),
            call: call.into(),
            detail,
        }
    }

    /// Errors the device reported asynchronously since the last check.
    fn take_errors(&self, call: &str) -> Result<()> {
        let mut e = self.errors.lock().unwrap();
        if e.is_empty() {
            return Ok(());
        }
        let msg = e.join("; ");
        e.clear();
        Err(self.device_error(call, msg))
    }

    pub(super) fn storage<'a>(&self, t: &'a Tensor) -> Result<&'a WgpuStorage> {
        match t.storage.as_any().downcast_ref::<WgpuStorage>() {
            Some(s) if *t.device == *self.name => Ok(s),
            _ => Err(Error::Other(format!("tensor on {} used on {}", t.device, self.name))),
        }
    }

    pub(super) fn alloc_tensor(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        // whole 16-byte units, so a buffer can be read as vec4<u32> words (kernel::Access::Read4)
        let bytes = super::qlayout::device_bytes(dtype, numel(shape)).div_ceil(16).max(1) as u64 * 16;
        if bytes > self.caps.max_buffer {
            return Err(self.device_error(
                "create_buffer",
                format!("{bytes} bytes exceeds max_buffer_size {}", self.caps.max_buffer),
            ));
        }
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensor"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Tensor {
            dtype,
            shape: shape.to_vec(),
            offset: 0,
            storage: Arc::new(WgpuStorage { buffer, id }),
            device: Arc::from(self.name.as_str()),
        })
    }

    /// A scratch tensor of at least `n` elements, reused across calls (ops run in order, so one
    /// op's scratch is never live while another's is written).
    pub(super) fn scratch(&self, name: &'static str, dtype: DType, n: usize) -> Result<Tensor> {
        let mut s = self.scratch.lock().unwrap();
        if let Some(t) = s.get(name).filter(|t| t.dtype == dtype && t.numel() >= n) {
            return t.view(0, &[n]);
        }
        let t = self.alloc_tensor(dtype, &[n.max(1024)])?;
        s.insert(name, t.clone());
        t.view(0, &[n])
    }

    pub(super) fn upload_bytes(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
        if bytes.len() != t.nbytes() {
            return Err(Error::Other(format!(
                "upload of {} bytes into a {} byte tensor",
                bytes.len(),
                t.nbytes()
            )));
        }
        let buf = &self.storage(t)?.buffer;
        // Recorded work must run before this write lands: submit it first.
        if self.rec.lock().unwrap().slots > 0 {
            self.submit()?;
        }
        if let Some(g) = super::qlayout::group(t.dtype) {
            return self.upload_grouped(buf, t, bytes, g);
        }
        let off = t.byte_offset() as u64;
        let whole = bytes.len() / 4 * 4;
        if whole > 0 {
            self.queue.write_buffer(buf, off, &bytes[..whole]);
        }
        if whole < bytes.len() {
            // A trailing half word: keep the other half of that word as it is.
            let word_off = off + whole as u64;
            let mut word = self.read_raw(buf, word_off, 4)?;
            word[..2].copy_from_slice(&bytes[whole..]);
            self.queue.write_buffer(buf, word_off, &word);
        }
        Ok(())
    }

    /// q8_0 goes into the device's groups of 8 blocks (qlayout.rs); a first or last group the
    /// tensor fills only in part is read first, so the other blocks' slots keep their bytes.
    fn upload_grouped(&self, buf: &wgpu::Buffer, t: &Tensor, bytes: &[u8], (bb, gb): (usize, usize)) -> Result<()> {
        let qk = t.dtype.block().0;
        if t.offset % qk != 0 || (t.dtype == DType::Q8_0 && t.offset != 0) {
            return Err(Error::Other(format!(
                "upload: a {} tensor must start at {} of its buffer, not element {}",
                t.dtype,
                if t.dtype == DType::Q8_0 { "block 0" } else { "a block" },
                t.offset
            )));
        }
        let (b0, nblk) = (t.offset / qk, bytes.len() / bb);
        let (g0, g1) = (b0 / 8, (b0 + nblk).div_ceil(8));
        let mut dev = vec![0u8; (g1 - g0) * gb];
        if b0 % 8 != 0 {
            dev[..gb].copy_from_slice(&self.read_raw(buf, (g0 * gb) as u64, gb as u64)?);
        }
        if (b0 + nblk) % 8 != 0 && (g1 - 1 > g0 || b0 % 8 == 0) {
            let last = (g1 - 1 - g0) * gb;
            dev[last..].copy_from_slice(&self.read_raw(buf, ((g1 - 1) * gb) as u64, gb as u64)?);
        }
        super::qlayout::to_device(t.dtype, b0, bytes, &mut dev);
        if !dev.is_empty() {
            self.queue.write_buffer(buf, (g0 * gb) as u64, &dev);
        }
        Ok(())
    }

    pub(super) fn download_bytes(&self, t: &Tensor) -> Result<Vec<u8>> {
        self.submit()?;
        let buf = &self.storage(t)?.buffer;
        if let Some((_, gb)) = super::qlayout::group(t.dtype) {
            let qk = t.dtype.block().0;
            let (b0, nblk) = (t.offset / qk, t.numel() / qk);
            let (g0, g1) = (b0 / 8, (b0 + nblk).div_ceil(8));
            let mut out = vec![0u8; t.nbytes()];
            if g1 > g0 {
                let dev = self.read_raw(buf, (g0 * gb) as u64, ((g1 - g0) * gb) as u64)?;
                super::qlayout::from_device(t.dtype, b0, &dev, &mut out);
            }
            return Ok(out);
        }
        let n = t.nbytes();
        let mut v = self.read_raw(buf, t.byte_offset() as u64, n.div_ceil(4) as u64 * 4)?;
        v.truncate(n);
        Ok(v)
    }

    fn read_raw(&self, buf: &wgpu::Buffer, off: u64, size: u64) -> Result<Vec<u8>> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("readback"),
        });
        enc.copy_buffer_to_buffer(buf, off, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.device_error("poll", e.to_string()))?;
        rx.recv()
            .map_err(|e| self.device_error("map_async", e.to_string()))?
            .map_err(|e| self.device_error("map_async", e.to_string()))?;
        let data = staging
            .get_mapped_range(..)
            .map_err(|e| self.device_error("get_mapped_range", format!("{e:?}")))?
            .to_vec();
        staging.unmap();
        self.take_errors("readback")?;
        Ok(data)
    }

    fn pipeline(&self, key: &KernelKey, body: &str, consts: &[(&str, String)]) -> Result<Arc<Pipeline>> {
        if let Some(p) = self.pipelines.lock().unwrap().get(key) {
            return Ok(p.clone());
        }
        let label = key.label();
        // naga 30 gates subgroup builtins on the device's capabilities; it rejects `enable subgroups;`
        let src = kernel::generate(key, body, consts, &[]);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&label),
            source: wgpu::ShaderSource::Wgsl(src.into()),
        };
        let module = if kernel::shader_checks(key.entry) {
            self.device.create_shader_module(desc)
        } else {
            // SAFETY: only this crate's own kernels come here (quant.rs' entries unless
            // WGLLM_SHADER_CHECKS=0): every loop has a bound, rows and elements are guarded
            // against Params' m / n / k in the kernel (the harness's ragged shapes pass with the
            // checks off, on lavapipe and the H200), and the device keeps the driver's robust
            // buffer access where it has it.
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
                        read_only: b.access != kernel::Access::Write,
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
        let p = Arc::new(Pipeline { pipeline, layout });
        self.pipelines.lock().unwrap().insert(key.clone(), p.clone());
        Ok(p)
    }

    /// Records one dispatch. `params` is the kernel's Params struct as bytes; its first 32 bytes
    /// (`offs`) are overwritten with the tensors' element offsets, in binding order.
    pub(super) fn dispatch(
        &self,
        key: &KernelKey,
        body: &str,
        consts: &[(&str, String)],
        params: &[u8],
        tensors: &[&Tensor],
        groups: (u32, u32, u32),
    ) -> Result<()> {
        assert_eq!(tensors.len(), key.bindings.len(), "{}: tensors vs bindings", key.entry);
        // `offs` holds one element offset per tensor: 8 in the usual `array<vec4<u32>, 2>`, up to
        // 12 for a kernel whose Params starts with `array<vec4<u32>, 3>`
        assert!(
            params.len() >= 32 && params.len() as u64 <= SLOT && params.len() % 16 == 0,
            "{}: params size",
            key.entry
        );
        assert!(
            tensors.len() <= 12 && params.len() >= 16 * tensors.len().div_ceil(4),
            "{}: {} tensors",
            key.entry,
            tensors.len()
        );
        let pipe = self.pipeline(key, body, consts)?;
        let mut bytes = params.to_vec();
        for (k, t) in tensors.iter().enumerate() {
            bytes[k * 4..k * 4 + 4].copy_from_slice(&(t.offset as u32).to_le_bytes());
        }
        let mut bufs = Vec::with_capacity(tensors.len());
        let mut ids = Vec::with_capacity(tensors.len());
        for t in tensors {
            let st = self.storage(t)?;
            bufs.push(&st.buffer);
            ids.push(st.id);
        }
        if self.rec.lock().unwrap().slots >= SLOTS {
            self.submit()?;
        }
        let bg = {
            let mut cache = self.bind_groups.lock().unwrap();
            let k = (key.clone(), ids);
            match cache.get(&k) {
                Some(bg) => bg.clone(),
                None => {
                    let mut entries = vec![wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &self.arena,
                            offset: 0,
                            size: std::num::NonZeroU64::new(SLOT),
                        }),
                    }];
                    for (k, b) in bufs.iter().enumerate() {
                        entries.push(wgpu::BindGroupEntry {
                            binding: k as u32 + 1,
                            resource: b.as_entire_binding(),
                        });
                    }
                    let bg = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &pipe.layout,
                        entries: &entries,
                    });
                    if cache.len() >= 8192 {
                        cache.clear();
                    }
                    cache.insert(k, bg.clone());
                    bg
                }
            }
        };
        let mut rec = self.rec.lock().unwrap();
        let slot = rec.slots;
        rec.slots += 1;
        rec.params.resize((slot * SLOT) as usize, 0);
        rec.params.extend_from_slice(&bytes);
        if rec.encoder.is_none() {
            rec.encoder = Some(
                self.device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("step") }),
            );
        }
        if rec.profiler.is_some() {
            // profiling: one pass per dispatch, with begin/end timestamps
            let Recorder {
                profiler,
                encoder,
                pass,
                ..
            } = &mut *rec;
            *pass = None;
            let tw = profiler.as_mut().unwrap().writes(key.entry);
            *pass = Some(
                encoder
                    .as_mut()
                    .unwrap()
                    .begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(key.entry),
                        timestamp_writes: Some(tw),
                    })
                    .forget_lifetime(),
            );
        } else if rec.pass.is_none() {
            let enc = rec.encoder.as_mut().unwrap();
            let pass = enc
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("step"),
                    timestamp_writes: None,
                })
                .forget_lifetime();
            rec.pass = Some(pass);
        }
        let pass = rec.pass.as_mut().unwrap();
        pass.set_pipeline(&pipe.pipeline);
        pass.set_bind_group(0, &bg, &[(slot * SLOT) as u32]);
        pass.dispatch_workgroups(groups.0, groups.1, groups.2);
        self.dispatches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let full = rec.profiler.as_ref().is_some_and(|p| p.full());
        drop(rec);
        if full {
            self.submit()?;
        }
        if std::env::var("WGLLM_SYNC").is_ok_and(|v| v == "all" || v.split(',').any(|e| e == key.entry)) {
            self.submit()?;
        }
        Ok(())
    }

    /// Submits everything recorded so far plus a copy of `t` into a fresh mappable buffer, in one
    /// submit, and starts mapping it. The GPU runs on while the host does other work (records the
    /// next step); `Readback::wait` collects the bytes.
    pub fn submit_readback(&self, t: &Tensor) -> Result<Readback> {
        if t.dtype.is_quant() {
            return Err(Error::Other(format!(
                "submit_readback: {} tensors come back through download (device block order)",
                t.dtype
            )));
        }
        let src = &self.storage(t)?.buffer;
        let size = (t.nbytes().div_ceil(4) * 4) as u64;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback-async"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let index = self.submit_with(Some((src, t.byte_offset() as u64, &staging, size)))?;
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        Ok(Readback {
            buf: staging,
            rx,
            len: t.nbytes(),
            index,
        })
    }

    /// Submits everything recorded since the last submit, in one submit.
    pub(super) fn submit(&self) -> Result<()> {
        self.submit_with(None).map(|_| ())
    }

    fn submit_with(
        &self,
        copy: Option<(&wgpu::Buffer, u64, &wgpu::Buffer, u64)>,
    ) -> Result<Option<wgpu::SubmissionIndex>> {
        let mut rec = self.rec.lock().unwrap();
        if rec.slots == 0 && copy.is_none() {
            return self.take_errors("submit").map(|_| None);
        }
        rec.pass = None;
        let mut enc = match rec.encoder.take() {
            Some(e) => e,
            None => self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("readback"),
            }),
        };
        if let Some((src, off, dst, size)) = copy {
            enc.copy_buffer_to_buffer(src, off, dst, 0, size);
        }
        let n = rec.params.len().div_ceil(4) * 4;
        rec.params.resize(n, 0);
        self.queue.write_buffer(&self.arena, 0, &rec.params);
        let profiled = rec.profiler.as_ref().map(|p| p.labels.len() as u64).filter(|&n| n > 0);
        if let (Some(n), Some(p)) = (profiled, rec.profiler.as_ref()) {
            enc.resolve_query_set(&p.queries, 0..(2 * n) as u32, &p.resolve, 0);
        }
        let index = self.queue.submit([enc.finish()]);
        self.last_submit.store(rec.slots, std::sync::atomic::Ordering::Relaxed);
        rec.params.clear();
        rec.slots = 0;
        if let Some(n) = profiled {
            let p = rec.profiler.as_ref().unwrap();
            let raw = self.read_raw(&p.resolve, 0, 16 * n)?;
            let ticks: Vec<u64> = raw
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            rec.profiler.as_mut().unwrap().absorb(&ticks);
        }
        drop(rec);
        self.take_errors("submit").map(|_| Some(index))
    }

    /// Turns per-dispatch GPU timestamps on or off (needs TIMESTAMP_QUERY). Returns false when the
    /// adapter lacks timestamps.
    pub fn set_profiling(&self, on: bool) -> Result<bool> {
        self.submit()?;
        let mut rec = self.rec.lock().unwrap();
        if !on {
            rec.profiler = None;
            return Ok(true);
        }
        if !self.caps.timestamp_query {
            return Ok(false);
        }
        rec.profiler = Some(super::profile::Profiler::new(&self.device, &self.queue));
        Ok(true)
    }

    /// GPU time per kernel entry point since profiling was turned on: (entry, total ns, dispatches).
    pub fn profile(&self) -> Vec<(String, f64, u64)> {
        let rec = self.rec.lock().unwrap();
        rec.profiler
            .as_ref()
            .map(|p| p.totals.iter().map(|(k, v)| (k.to_string(), v.0, v.1)).collect())
            .unwrap_or_default()
    }

    /// Drops cached bind groups (they keep their buffers alive): call after freeing big tensors.
    pub fn forget_bind_groups(&self) {
        self.bind_groups.lock().unwrap().clear();
    }

    /// How many dispatches the most recent submit carried.
    pub fn last_submit_dispatches(&self) -> u64 {
        self.last_submit.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the device is idle.
    pub fn wait(&self) -> Result<()> {
        self.submit()?;
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.device_error("poll", e.to_string()))?;
        self.take_errors("wait")
    }
}

/// A read-back in flight (see `WgpuBackend::submit_readback`).
pub struct Readback {
    buf: wgpu::Buffer,
    rx: std::sync::mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
    len: usize,
    index: Option<wgpu::SubmissionIndex>,
}

impl Readback {
    /// Waits for the GPU to reach the copy and returns the bytes.
    pub fn wait(self, dev: &WgpuBackend) -> Result<Vec<u8>> {
        loop {
            match self.rx.try_recv() {
                Ok(r) => {
                    r.map_err(|e| dev.device_error("map_async", e.to_string()))?;
                    break;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    // wait for this submission only, not for steps queued after it
                    let wait = wgpu::PollType::Wait {
                        submission_index: self.index.clone(),
                        timeout: None,
                    };
                    dev.device
                        .poll(wait)
                        .map_err(|e| dev.device_error("poll", e.to_string()))?;
                }
                Err(e) => return Err(dev.device_error("map_async", e.to_string())),
            }
        }
        let mut v = self
            .buf
            .get_mapped_range(..)
            .map_err(|e| dev.device_error("get_mapped_range", format!("{e:?}")))?
            .to_vec();
        self.buf.unmap();
        v.truncate(self.len);
        dev.take_errors("readback")?;
        Ok(v)
    }
}
