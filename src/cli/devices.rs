//! `wgllm devices`
use crate::backend::wgpu::WgpuBackend;
use crate::backend::{candidates, default_index, Backend};
use crate::error::Result;
use serde_json::json;
use std::process::ExitCode;

pub fn run(as_json: bool) -> Result<ExitCode> {
    let gpus = WgpuBackend::all();
    let native = crate::backend::native_devices();
    let absent = crate::backend::absent_backends();
    // the device `wgllm run` and `wgllm bench` use without --device: an index into gpus ++ native,
    // None for the cpu backend
    let default = default_index(&candidates(&gpus, &native));
    let is_default = |k: Option<usize>| k == default;
    let mut rows = vec![
        json!({"name": "cpu", "backend": "host", "type": "Cpu", "role": "reference", "default": is_default(None)}),
    ];
    for (k, g) in gpus.iter().enumerate() {
        let i = &g.info;
        rows.push(json!({
            "default": is_default(Some(k)),
            "name": g.name(),
            "adapter": i.name,
            "backend": format!("{:?}", i.backend),
            "type": format!("{:?}", i.device_type),
            "driver": format!("{} {}", i.driver, i.driver_info).trim().to_string(),
            "features": g.caps,
        }));
    }
    for (k, (d, desc)) in native.iter().enumerate() {
        rows.push(json!({"name": d.name(), "backend": "native (hip/ kernels)", "description": desc, "default": is_default(Some(gpus.len() + k))}));
    }
    for (b, why) in &absent {
        rows.push(json!({"name": b, "backend": "native (hip/ kernels)", "absent": why}));
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap());
        return Ok(ExitCode::SUCCESS);
    }
    let mark = |k: Option<usize>| if is_default(k) { "  [default for run]" } else { "" };
    println!("cpu  (host, reference backend: every op, every dtype){}", mark(None));
    for (k, g) in gpus.iter().enumerate() {
        let (i, c) = (&g.info, &g.caps);
        println!(
            "{}  ({}, {:?}, {:?}, driver {} {}){}",
            g.name(),
            i.name,
            i.backend,
            i.device_type,
            i.driver,
            i.driver_info,
            mark(Some(k))
        );
        println!(
            "    shader_f16={} subgroup={} (size {}..{}) timestamp_query={} cooperative_matrix={}",
            c.shader_f16,
            c.subgroup,
            c.subgroup_min,
            c.subgroup_max,
            c.timestamp_query,
            match c.coop_tile {
                0 => "false".to_string(),
                t => format!("f16 {t}x{t}x{t}"),
            }
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
    for (k, (d, desc)) in native.iter().enumerate() {
        println!(
            "{}  (native hip/ kernels: {desc}){}",
            d.name(),
            mark(Some(gpus.len() + k))
        );
    }
    for (b, why) in &absent {
        println!("{b}  (absent: {why})");
    }
    Ok(ExitCode::SUCCESS)
}
