//! The read-bandwidth probe: bytes read per second by a plain streaming kernel. Benchmarks and
//! `wgllm bench` report throughput as a fraction of this number measured in the same run.
use super::kernel::{read, write, KernelKey};
use super::WgpuBackend;
use crate::dtype::DType;
use crate::error::Result;
use bytemuck::{Pod, Zeroable};

const SRC: &str = include_str!("../../../shaders/bandwidth.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    offs: [u32; 8],
    n_words: u32,
    total_threads: u32,
    pad: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<Params>() == 48);

impl WgpuBackend {
    /// Measures read bandwidth in bytes/s over a `bytes`-sized buffer, `iters` sweeps in one submit.
    pub fn read_bandwidth(&self, bytes: usize, iters: usize) -> Result<f64> {
        let words = (bytes / 4).min((self.caps.max_binding / 4) as usize);
        let x = self.alloc_tensor(DType::U32, &[words])?;
        let threads: u32 = 256 * 1024;
        let y = self.alloc_tensor(DType::U32, &[threads as usize])?;
        let key = KernelKey { entry: "read_sweep", bindings: vec![read("x", DType::U32), write("y", DType::U32)], variant: String::new() };
        let p = Params { offs: [0; 8], n_words: words as u32, total_threads: threads, pad: [0; 2] };
        let groups = threads / 256;
        // warm up (pipeline compile, first touch)
        self.dispatch(&key, SRC, &[], bytemuck::bytes_of(&p), &[&x, &y], (groups, 1, 1))?;
        self.wait()?;
        let t0 = std::time::Instant::now();
        for _ in 0..iters {
            self.dispatch(&key, SRC, &[], bytemuck::bytes_of(&p), &[&x, &y], (groups, 1, 1))?;
        }
        self.wait()?;
        let dt = t0.elapsed().as_secs_f64();
        Ok((words * 4 * iters) as f64 / dt)
    }
}
