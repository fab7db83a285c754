//! `wgllm devices`
use crate::backend::wgpu::WgpuBackend;
use crate::backend::Backend;
use crate::error::Result;
use serde_json::json;
use std::process::ExitCode;

pub fn run(as_json: bool) -> Result<ExitCode> {
    let gpus = WgpuBackend::all();
    let mut rows = vec![json!({"name": "cpu", "backend": "host", "type": "Cpu", "role": "reference"})];
    for g in &gpus {
        let i = &g.info;
        rows.push(json!({
            "name": g.name(),
            "adapter": i.name,
            "backend": format!("{:?}", i.backend),
            "type": format!("{:?}", i.device_type),
            "driver": format!("{} {}", i.driver, i.driver_info).trim().to_string(),
            "features": g.caps,
        }));
    }
    let native = crate::backend::native_devices();
    let absent = crate::backend::absent_backends();
    for (d, desc) in &native {
        rows.push(json!({"name": d.name(), "backend": "native (hip/ kernels)", "description": desc}));
    }
    for (b, why) in &absent {
        rows.push(json!({"name": b, "backend": "native (hip/ kernels)", "absent": why}));
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap());
        return Ok(ExitCode::SUCCESS);
    }
    println!("cpu  (host, reference backend: every op, every dtype)");
    for g in &gpus {
        let (i, c) = (&g.info, &g.caps);
        println!(
            "{}  ({}, {:?}, {:?}, driver {} {})",
            g.name(),
            i.name,
            i.backend,
            i.device_type,
            i.driver,
            i.driver_info
        );
        println!(
            "    shader_f16={} subgroup={} (size {}..{}) timestamp_query={} cooperative_matrix={}",
            c.shader_f16, c.subgroup, c.subgroup_min, c.subgroup_max, c.timestamp_query, c.cooperative_matrix
        );
        println!(
            "    max_storage_binding={} MiB max_buffer={} MiB workgroup_storage={} KiB invocations={}",
            c.max_binding >> 20,
            c.max_buffer >> 20,
            c.max_workgroup_storage >> 10,
            c.max_invocations
        );
    }
    if gpus.is_empty() {
        println!("(no wgpu adapter found: install a Vulkan driver, e.g. mesa-vulkan-drivers for lavapipe)");
    }
    for (d, desc) in &native {
        println!("{}  (native hip/ kernels: {desc})", d.name());
    }
    for (b, why) in &absent {
        println!("{b}  (absent: {why})");
    }
    Ok(ExitCode::SUCCESS)
}
