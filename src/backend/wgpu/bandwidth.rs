//! The read-bandwidth probe: bytes read per second by a plain streaming kernel. Benchmarks and
//! `wgllm bench` report throughput as a fraction of this number measured in the same run.
use super::kernel::{read, read4, write, KernelKey};
use super::WgpuBackend;
use crate::dtype::DType;
use crate::error::Result;
use bytemuck::{Pod, Zeroable};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    n_words: u32,
    total_threads: u32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

/// Rounds of the probe; the fastest counts.
const ROUNDS: usize = 3;

impl WgpuBackend {
    /// Measures read bandwidth in bytes/s over a `bytes`-sized buffer: the fastest of ROUNDS
    /// rounds of two streaming kernels (4-byte and 16-byte loads a thread), `iters` sweeps each
    /// in one submit, recorded before the clock starts (GPU time, as `wgllm bench --op` times its
    /// kernels). One round's figure varies by up to 10% from one invocation to the next on a big
    /// GPU, and every fraction reported against it with it; the best of several is the bandwidth
    /// the device showed, the honest denominator.
    pub fn read_bandwidth(&self, bytes: usize, iters: usize) -> Result<f64> {
        let words = (bytes / 16 * 4).min((self.caps.max_binding / 16 * 4) as usize);
        let x = self.alloc_tensor(DType::U32, &[words])?;
        self.sweep_bandwidth(&[x], 256 * 1024, iters)
    }

    /// The same streaming kernels over `copies` buffers of `bytes` each, one after the other
    /// (each sweep a dependent dispatch, as `wgllm bench --op` runs an op): what a plain read of
    /// an op's bytes reaches at that size, launch and tail included. The threads shrink with the
    /// buffer so each still has four 16-byte loads in flight.
    pub fn read_bandwidth_sized(&self, bytes: usize, copies: usize, iters: usize) -> Result<f64> {
        let words = (bytes / 16 * 4)
            .max(1024)
            .min((self.caps.max_binding / 16 * 4) as usize);
        let xs = (0..copies.max(1))
            .map(|_| self.alloc_tensor(DType::U32, &[words]))
            .collect::<Result<Vec<_>>>()?;
        let threads = (words / 16).div_ceil(256).clamp(1, 1024) as u32 * 256;
        self.sweep_bandwidth(&xs, threads, iters)
    }

    fn sweep_bandwidth(&self, xs: &[crate::tensor::Tensor], threads: u32, iters: usize) -> Result<f64> {
        let words = xs[0].numel();
        let y = self.alloc_tensor(DType::U32, &[threads as usize])?;
        let p = Params {
            offs: [0; 8],
            n_words: words as u32,
            total_threads: threads,
            pad: [0; 2],
        };
        let groups = threads / 256;
        let mut best = 0f64;
        // the 16-byte sweep shares bandwidth.wgsl's Params (everything before its entry point)
        let src = self.source("bandwidth.wgsl");
        let src4 = format!(
            "{}{}",
            &src[..src.find("@compute").unwrap_or(0)],
            self.source("bandwidth_v4.wgsl")
        );
        let kernels = [
            ("read_sweep", src, read("x", DType::U32)),
            ("read_sweep4", src4.as_str(), read4("x", DType::U32)),
        ];
        for (entry, src, x_bind) in (0..ROUNDS).flat_map(|_| kernels.iter().cloned()) {
            let key = KernelKey {
                entry,
                bindings: vec![x_bind, write("y", DType::U32)],
                variant: String::new(),
            };
            // warm up (pipeline compile, first touch)
            for x in xs {
                self.dispatch(
                    &key,
                    || (src.to_string(), vec![]),
                    bytemuck::bytes_of(&p),
                    &[x, &y],
                    (groups, 1, 1),
                )?;
            }
            self.wait()?;
            for i in 0..iters {
                self.dispatch(
                    &key,
                    || (src.to_string(), vec![]),
                    bytemuck::bytes_of(&p),
                    &[&xs[i % xs.len()], &y],
                    (groups, 1, 1),
                )?;
            }
            let t0 = std::time::Instant::now();
            self.wait()?;
            best = best.max((words * 4 * iters) as f64 / t0.elapsed().as_secs_f64());
        }
        Ok(best)
    }
}
