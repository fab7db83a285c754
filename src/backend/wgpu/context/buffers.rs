//! Tensor buffers: allocation (whole 16-byte units), scratch tensors, uploads and downloads
//! (q8_0 through its device groups, qlayout.rs) and the raw read-back they share.
use super::{WgpuBackend, WgpuStorage};
use crate::backend::wgpu::qlayout;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::Arc;

impl WgpuBackend {
    pub(crate) fn alloc_tensor(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        // what to try, for every allocation the device cannot make (issue 21: an error that says
        // what happened and what to try, never a panic)
        const TRY: &str = "try a smaller --ctx (the KV cache grows with it), fewer --max-seqs or --kv-memory \
             when serving, a quantized model, or another device (`wgllm devices`; --device cpu)";
        let what = || format!("a {dtype} tensor [{}]", crate::tensor::shape_str(shape));
        // checked: a shape from a corrupt file must not wrap into a small buffer (2^50 elements is
        // past any device, and keeps the byte arithmetic below far from overflow)
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .filter(|&n| n <= 1 << 50)
            .ok_or_else(|| {
                self.device_error(
                    "create_buffer",
                    format!("{}: the element count overflows; {TRY}", what()),
                )
            })?;
        // whole 16-byte units, so a buffer can be read or written as vec4<u32> words (kernel::Access::Read4, Write4)
        let bytes = qlayout::device_bytes(dtype, n).div_ceil(16).max(1) as u64 * 16;
        if bytes > self.caps.max_buffer {
            return Err(self.device_error(
                "create_buffer",
                format!(
                    "{} needs {bytes} bytes, more than this adapter allows in one buffer (max_buffer_size {}); {TRY}",
                    what(),
                    self.caps.max_buffer
                ),
            ));
        }
        // out of device memory arrives as an error scope's error, not a failed call
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensor"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(self.device_error(
                "create_buffer",
                format!("{} ({bytes} bytes): out of device memory ({e}); {TRY}", what()),
            ));
        }
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
    pub(crate) fn scratch(&self, name: &'static str, dtype: DType, n: usize) -> Result<Tensor> {
        let mut s = self.scratch.lock().unwrap();
        if let Some(t) = s.get(name).filter(|t| t.dtype == dtype && t.numel() >= n) {
            return t.view(0, &[n]);
        }
        let t = self.alloc_tensor(dtype, &[n.max(1024)])?;
        s.insert(name, t.clone());
        t.view(0, &[n])
    }

    pub(crate) fn upload_bytes(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
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
        if let Some(g) = qlayout::group(t.dtype) {
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
    /// tensor (or a view past block 0) fills only in part is read first, so the other blocks'
    /// slots keep their bytes.
    fn upload_grouped(&self, buf: &wgpu::Buffer, t: &Tensor, bytes: &[u8], (bb, gb): (usize, usize)) -> Result<()> {
        let qk = t.dtype.block().0;
        if t.offset % qk != 0 {
            return Err(Error::Other(format!(
                "upload: a {} tensor must start at a block of its buffer, not element {}",
                t.dtype, t.offset
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
        qlayout::to_device(t.dtype, b0, bytes, &mut dev);
        if !dev.is_empty() {
            self.queue.write_buffer(buf, (g0 * gb) as u64, &dev);
        }
        Ok(())
    }

    pub(crate) fn download_bytes(&self, t: &Tensor) -> Result<Vec<u8>> {
        self.submit()?;
        let buf = &self.storage(t)?.buffer;
        if let Some((_, gb)) = qlayout::group(t.dtype) {
            let qk = t.dtype.block().0;
            let (b0, nblk) = (t.offset / qk, t.numel() / qk);
            let (g0, g1) = (b0 / 8, (b0 + nblk).div_ceil(8));
            let mut out = vec![0u8; t.nbytes()];
            if g1 > g0 {
                let dev = self.read_raw(buf, (g0 * gb) as u64, ((g1 - g0) * gb) as u64)?;
                qlayout::from_device(t.dtype, b0, &dev, &mut out);
            }
            return Ok(out);
        }
        let n = t.nbytes();
        let mut v = self.read_raw(buf, t.byte_offset() as u64, n.div_ceil(4) as u64 * 4)?;
        v.truncate(n);
        Ok(v)
    }

    pub(super) fn read_raw(&self, buf: &wgpu::Buffer, off: u64, size: u64) -> Result<Vec<u8>> {
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
}
