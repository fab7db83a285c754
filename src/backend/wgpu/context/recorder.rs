//! The dispatch recorder: every dispatch goes into one open compute pass of one command encoder,
//! its Params into a 256-byte slot of the uniform arena; `submit` writes the arena and submits
//! everything recorded so far at once (a decode step is one submit; a forward of 64 rows or more
//! two, its first layer on its own: model/qwen3.rs `EARLY_SUBMIT_ROWS`). Also the asynchronous
//! read-back, and per-dispatch GPU timestamps (profile.rs) when profiling is on.
use super::WgpuBackend;
use crate::backend::wgpu::kernel::KernelKey;
use crate::backend::wgpu::profile::Profiler;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Bytes of one dispatch's Params slot, and slots in the arena (a submit happens when it is full).
pub(super) const SLOT: u64 = 256;
pub(super) const SLOTS: u64 = 2048;

pub(super) struct Recorder {
    pub(super) profiler: Option<Profiler>,
    pub(super) encoder: Option<wgpu::CommandEncoder>,
    pub(super) pass: Option<wgpu::ComputePass<'static>>,
    pub(super) params: Vec<u8>,
    pub(super) slots: u64,
}

impl WgpuBackend {
    /// Records one dispatch. `params` is the kernel's Params struct as bytes; its first 32 bytes
    /// (`offs`) are overwritten with the tensors' element offsets, in binding order. `source`
    /// gives the kernel's WGSL body and constants, called only while its pipeline is not built:
    /// they are strings, and making them for every dispatch of a decode step cost more CPU time
    /// than recording the dispatch.
    pub(crate) fn dispatch<'c>(
        &self,
        key: &KernelKey,
        source: impl FnOnce() -> (String, Vec<(&'c str, String)>),
        params: &[u8],
        tensors: &[&Tensor],
        groups: (u32, u32, u32),
    ) -> Result<()> {
        let built = self.pipelines.lock().unwrap().get(key).cloned();
        let pipe = match built {
            Some(p) => p,
            None => {
                let (body, consts) = source();
                self.pipeline(key, &body, &consts)?
            }
        };
        self.record_dispatch(key, &pipe, params, tensors, groups)
    }

    fn record_dispatch(
        &self,
        key: &KernelKey,
        pipe: &std::sync::Arc<super::pipelines::Pipeline>,
        params: &[u8],
        tensors: &[&Tensor],
        groups: (u32, u32, u32),
    ) -> Result<()> {
        assert_eq!(tensors.len(), key.bindings.len(), "{}: tensors vs bindings", key.entry);
        // `offs` holds one element offset per tensor: 8 in the usual `array<vec4<u32>, 2>`, up to
        // 16 for a kernel whose Params starts with `array<vec4<u32>, 4>`
        assert!(
            params.len() >= 32 && params.len() as u64 <= SLOT && params.len() % 16 == 0,
            "{}: params size",
            key.entry
        );
        assert!(
            tensors.len() <= 16 && params.len() >= 16 * tensors.len().div_ceil(4),
            "{}: {} tensors",
            key.entry,
            tensors.len()
        );
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
            let k = (std::sync::Arc::as_ptr(pipe) as usize, ids);
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
            let tw = profiler.as_mut().unwrap().writes(super::super::profile::row_name(key));
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
        if self.tuning.sync_after(key.entry) {
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
    pub(crate) fn submit(&self) -> Result<()> {
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
        rec.profiler = Some(Profiler::new(&self.device, &self.queue));
        Ok(true)
    }

    /// GPU time per kernel entry point since profiling was turned on: (entry, total ns, dispatches).
    /// While profiling: the op about to record charges its bytes and FLOPs (`op::traffic`) to its
    /// first dispatch.
    pub(crate) fn note_traffic(&self, desc: &crate::op::OpDesc) {
        if let Some(p) = self.rec.lock().unwrap().profiler.as_mut() {
            p.pending = Some(crate::op::traffic(desc));
        }
    }

    pub fn profile(&self) -> Vec<crate::backend::KernelTime> {
        let rec = self.rec.lock().unwrap();
        let row = |(k, v): (&&'static str, &(f64, u64, f64, f64))| crate::backend::KernelTime {
            kernel: k.to_string(),
            ns: v.0,
            dispatches: v.1,
            bytes: v.2,
            flops: v.3,
        };
        rec.profiler
            .as_ref()
            .map(|p| p.totals.iter().map(row).collect())
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
