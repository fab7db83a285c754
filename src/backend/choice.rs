//! The default device for generation (`wgllm run`, `wgllm bench` without `--device`): the fastest
//! real GPU, else the cpu backend. A CPU Vulkan driver (llvmpipe / lavapipe, wgpu's
//! `DeviceType::Cpu`) is never the default: it runs the WGSL kernels on the host slower than the cpu
//! backend runs its reference ops. The harness (tests/ops.rs, `wgllm parity`, `wgllm gate`) does not
//! go through this choice: it checks every wgpu device, CPU drivers included.
use super::{select_devices, wgpu::WgpuBackend, Backend};
use crate::error::{Error, Result};
pub use ::wgpu::DeviceType;

/// Index in `devices` (name, device type) of the device `run` uses by default, or None for the
/// cpu backend. Real GPUs rank discrete, integrated, virtual, other; the first of the best class
/// wins, so list wgpu adapters before native devices of the same GPU (wgpu decodes faster at
/// batch 1 there). CPU-type devices are never chosen.
pub fn default_index(devices: &[(String, DeviceType)]) -> Option<usize> {
    devices
        .iter()
        .enumerate()
        .filter_map(|(i, (_, t))| rank(*t).map(|r| (r, i)))
        .min()
        .map(|(_, i)| i)
}

/// Lower is faster; None for a device that runs on the host.
fn rank(t: DeviceType) -> Option<u8> {
    match t {
        DeviceType::DiscreteGpu => Some(0),
        DeviceType::IntegratedGpu => Some(1),
        DeviceType::VirtualGpu => Some(2),
        DeviceType::Other => Some(3),
        DeviceType::Cpu => None,
    }
}

/// The (name, device type) list `default_index` chooses from, in `all_devices` order without the
/// cpu backend: the wgpu adapters, then the native devices (each a GPU: they run on CUDA or ROCm).
pub fn candidates(wgpu: &[WgpuBackend], native: &[(Box<dyn Backend>, String)]) -> Vec<(String, DeviceType)> {
    let mut v: Vec<(String, DeviceType)> = wgpu.iter().map(|g| (g.name(), g.info.device_type)).collect();
    v.extend(native.iter().map(|(d, _)| (d.name(), DeviceType::DiscreteGpu)));
    v
}

/// The device `spec` names (`cpu`, `wgpu`, `wgpu:NAME`, ...: the first match), or without a spec
/// the default: the fastest real GPU, else the cpu backend.
pub fn pick_device(spec: Option<&str>) -> Result<Box<dyn Backend>> {
    if let Some(s) = spec {
        return select_devices(s)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::NoDevice(s.into()));
    }
    let wgpu = WgpuBackend::all();
    let native = super::native_devices();
    let list = candidates(&wgpu, &native);
    let Some(i) = default_index(&list) else {
        if list.is_empty() {
            log::info!("no GPU found: running on the cpu backend");
        } else {
            let names: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
            log::info!(
                "only CPU drivers ({}): running on the cpu backend, which decodes faster here (--device wgpu uses them)",
                names.join(", ")
            );
        }
        return Ok(Box::new(super::cpu::CpuBackend::new()));
    };
    log::info!("default device: {}", list[i].0);
    let dev: Box<dyn Backend> = match i.checked_sub(wgpu.len()) {
        None => Box::new(wgpu.into_iter().nth(i).expect("index in range")),
        Some(j) => native.into_iter().nth(j).expect("index in range").0,
    };
    Ok(dev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeviceType::*;

    fn pick(devs: &[(&str, DeviceType)]) -> Option<String> {
        let v: Vec<(String, DeviceType)> = devs.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        default_index(&v).map(|i| v[i].0.clone())
    }

    #[test]
    fn the_default_is_the_fastest_real_gpu_never_a_cpu_driver() {
        // only llvmpipe: the cpu backend
        assert_eq!(pick(&[("wgpu/llvmpipe", Cpu)]).as_deref(), None);
        assert_eq!(pick(&[]).as_deref(), None);
        // a discrete GPU beats an integrated one and a CPU driver listed first
        assert_eq!(
            pick(&[
                ("wgpu/llvmpipe", Cpu),
                ("wgpu/intel-uhd", IntegratedGpu),
                ("wgpu/nvidia-h200", DiscreteGpu)
            ])
            .as_deref(),
            Some("wgpu/nvidia-h200")
        );
        // an integrated GPU beats the CPU driver
        assert_eq!(
            pick(&[("wgpu/llvmpipe", Cpu), ("wgpu/apple-m2", IntegratedGpu)]).as_deref(),
            Some("wgpu/apple-m2")
        );
        // equal class: the first listed (wgpu before the native device of the same GPU)
        assert_eq!(
            pick(&[("wgpu/nvidia-h200", DiscreteGpu), ("cuda/nvidia-h200", DiscreteGpu)]).as_deref(),
            Some("wgpu/nvidia-h200")
        );
        // a virtual GPU and an unknown type are still GPUs
        assert_eq!(
            pick(&[("wgpu/llvmpipe", Cpu), ("wgpu/virtio", VirtualGpu)]).as_deref(),
            Some("wgpu/virtio")
        );
        assert_eq!(
            pick(&[("wgpu/x", Other), ("wgpu/virtio", VirtualGpu)]).as_deref(),
            Some("wgpu/virtio")
        );
    }
}
