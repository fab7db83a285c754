//! `WGLLM_BENCH_DEVICE=nvidia cargo test --release --lib grid_sync_probe -- --ignored --nocapture`:
//! what a step between two dependent phases of work costs on the GPU, two ways: a chain of
//! dispatches in one compute pass (wgpu puts a barrier between each, as in a decode step), and
//! one dispatch whose workgroups meet at a grid barrier (an atomic counter between device-scope
//! fences: naga's storageBarrier is OpControlBarrier with Device memory scope) between phases.
//! Each phase every invocation checks the word another workgroup wrote in the phase before, so
//! the probe also shows whether the barrier makes the writes visible. A grid barrier needs every
//! workgroup of the grid resident at once, so the grids here stay far below an H200's capacity;
//! a CPU adapter (lavapipe runs workgroups one after another on a thread) gets one workgroup only.
use super::probe_kit::{self as kit, Stamps};
use super::WgpuBackend;
use crate::backend::Backend;
use std::time::Instant;

const SRC: &str = r#"
struct P { phase0: u32, phases: u32, groups: u32, _pad: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
// [0]: the barrier's arrivals, [1]: words read that were not what the phase before wrote
@group(0) @binding(2) var<storage, read_write> bar: array<atomic<u32>>;

fn grid_sync(lid: u32, goal: u32) {
    storageBarrier();
    if (lid == 0u) {
        atomicAdd(&bar[0], 1u);
        loop {
            if (atomicLoad(&bar[0]) - goal < 0x80000000u) {
                break;
            }
        }
    }
    storageBarrier();
}

// Phase `ph`: check the word of another workgroup's (and another lane's) invocation from phase
// ph - 1, then write this invocation's word of phase ph (the halves alternate by phase).
fn phase(ph: u32, wg: u32, lid: u32) {
    let n = p.groups * 256u;
    let me = wg * 256u + lid;
    let src = ((wg + 1u) % p.groups) * 256u + (255u - lid);
    if (ph > 0u) {
        if (data[((ph + 1u) % 2u) * n + src] != (ph - 1u) * n + src + 1u) {
            atomicAdd(&bar[1], 1u);
        }
    }
    data[(ph % 2u) * n + me] = ph * n + me + 1u;
}

@compute @workgroup_size(256)
fn one_phase(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    phase(p.phase0, w.x, lid);
}

@compute @workgroup_size(256)
fn many_phases(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    for (var i = 0u; i < p.phases; i++) {
        phase(p.phase0 + i, w.x, lid);
        grid_sync(lid, (i + 1u) * p.groups);
    }
}

// The same phases with no wait between them (the check's teeth: other workgroups' words of the
// phase before are not all there yet)
@compute @workgroup_size(256)
fn unsynced_phases(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    for (var i = 0u; i < p.phases; i++) {
        phase(p.phase0 + i, w.x, lid);
        storageBarrier();
    }
}
"#;

struct Probe<'a> {
    b: &'a WgpuBackend,
    layout: wgpu::BindGroupLayout,
    one: wgpu::ComputePipeline,
    many: wgpu::ComputePipeline,
    unsynced: wgpu::ComputePipeline,
    many_atomic: wgpu::ComputePipeline,
    unsynced_atomic: wgpu::ComputePipeline,
    data: wgpu::Buffer,
    bar: wgpu::Buffer,
    params: wgpu::Buffer,
    read: wgpu::Buffer,
    stamps: Stamps,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Chain,
    Grid,
    Unsynced,
    GridAtomic,
    UnsyncedAtomic,
}

const SLOT: u64 = 256;
const MAX_STEPS: u32 = 1024;
const MAX_GROUPS: u32 = 512;

impl<'a> Probe<'a> {
    fn new(b: &'a WgpuBackend) -> Probe<'a> {
        let d = &b.device;
        let scope = d.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("grid_sync_probe"),
            source: wgpu::ShaderSource::Wgsl(SRC.into()),
        });
        // the same phases with the words read and written through atomics (relaxed, device scope:
        // they bypass a non-coherent cache where plain loads may not)
        let atomic_src = SRC
            .replace(
                "var<storage, read_write> data: array<u32>;",
                "var<storage, read_write> data: array<atomic<u32>>;",
            )
            .replace(
                "if (data[((ph + 1u) % 2u) * n + src] != (ph - 1u) * n + src + 1u) {",
                "if (atomicLoad(&data[((ph + 1u) % 2u) * n + src]) != (ph - 1u) * n + src + 1u) {",
            )
            .replace(
                "data[(ph % 2u) * n + me] = ph * n + me + 1u;",
                "atomicStore(&data[(ph % 2u) * n + me], ph * n + me + 1u);",
            );
        assert_eq!(atomic_src.matches("atomicLoad(&data").count(), 1);
        let atomic_module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("grid_sync_probe_atomic"),
            source: wgpu::ShaderSource::Wgsl(atomic_src.into()),
        });
        let (layout, pl) = kit::layout(d, &[false, false]);
        let pipe_of = |module: &wgpu::ShaderModule, e: &str| kit::pipeline(d, &pl, module, e);
        let buf = |size: u64, usage: wgpu::BufferUsages| kit::buf(d, size, usage);
        use wgpu::BufferUsages as U;
        let pipe = |e: &str| pipe_of(&module, e);
        let (one, many, unsynced) = (pipe("one_phase"), pipe("many_phases"), pipe("unsynced_phases"));
        let (many_atomic, unsynced_atomic) = (
            pipe_of(&atomic_module, "many_phases"),
            pipe_of(&atomic_module, "unsynced_phases"),
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            panic!("grid_sync_probe: {e}");
        }
        Probe {
            b,
            one,
            many,
            unsynced,
            many_atomic,
            unsynced_atomic,
            layout,
            data: buf(2 * 256 * 4 * MAX_GROUPS as u64, U::STORAGE),
            bar: buf(256, U::STORAGE | U::COPY_SRC | U::COPY_DST),
            params: buf(SLOT * MAX_STEPS as u64, U::UNIFORM | U::COPY_DST),
            read: buf(256, U::MAP_READ | U::COPY_DST),
            stamps: Stamps::new(d),
        }
    }

    /// GPU seconds per step of `steps` phases over `groups` workgroups (a chain of dispatches, or
    /// one dispatch with grid barriers), and the words read wrong.
    fn run(&self, groups: u32, steps: u32, mode: Mode) -> (f64, u32) {
        let grid = mode != Mode::Chain;
        let (d, q) = (&self.b.device, &self.b.queue);
        let mut p = vec![0u8; (SLOT * steps as u64) as usize];
        for s in 0..steps as usize {
            let words = if grid {
                [0, steps, groups, 0]
            } else {
                [s as u32, 1, groups, 0]
            };
            p[s * SLOT as usize..][..16].copy_from_slice(bytemuck::cast_slice(&words));
        }
        q.write_buffer(&self.params, 0, &p);
        q.write_buffer(&self.bar, 0, &[0u8; 256]);
        let bg = kit::bind(d, &self.layout, &self.params, &[&self.data, &self.bar]);
        let mut enc = d.create_command_encoder(&Default::default());
        {
            let mut pass = self.stamps.pass(&mut enc);
            if grid {
                pass.set_pipeline(match mode {
                    Mode::Grid => &self.many,
                    Mode::Unsynced => &self.unsynced,
                    Mode::GridAtomic => &self.many_atomic,
                    _ => &self.unsynced_atomic,
                });
                pass.set_bind_group(0, &bg, &[0]);
                pass.dispatch_workgroups(groups, 1, 1);
            } else {
                pass.set_pipeline(&self.one);
                for s in 0..steps {
                    pass.set_bind_group(0, &bg, &[s * SLOT as u32]);
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
        }
        self.stamps.resolve(&mut enc, &self.read);
        enc.copy_buffer_to_buffer(&self.bar, 0, &self.read, 16, 8);
        let (secs, rest) = kit::finish(self.b, enc, &self.read);
        let c: &[u32] = bytemuck::cast_slice(&rest[..8]);
        let (arrivals, wrong) = (c[0], c[1]);
        if matches!(mode, Mode::Grid | Mode::GridAtomic) {
            assert_eq!(arrivals, groups * steps, "grid barrier arrivals");
        }
        (secs / steps as f64, wrong)
    }
}

#[test]
#[ignore = "a GPU measurement, run by hand on the machine it measures (see the top of this file)"]
fn grid_sync_probe() {
    let want = std::env::var("WGLLM_BENCH_DEVICE")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut runs = 0;
    let mut failed = false;
    for b in WgpuBackend::all().into_iter().filter(|b| b.name().contains(&want)) {
        if !b.caps.timestamp_query {
            println!("{}: skipped (no timestamp queries)", b.name());
            continue;
        }
        let cpu = b.info.device_type == wgpu::DeviceType::Cpu;
        let probe = Probe::new(&b);
        let grids: &[u32] = if cpu { &[1] } else { &[1, 16, 66, 132, 264] };
        for &g in grids {
            for mode in [
                Mode::Chain,
                Mode::Grid,
                Mode::Unsynced,
                Mode::GridAtomic,
                Mode::UnsyncedAtomic,
            ] {
                probe.run(g, 16, mode); // compile, first touch
                let t = Instant::now();
                let (s, wrong) = probe.run(g, MAX_STEPS, mode);
                println!(
                    "{}: {:>5} workgroups, {:>4} steps as {:<27} {:>7.2} us a step (GPU), {} words wrong, {:.1} ms wall",
                    b.name(),
                    g,
                    MAX_STEPS,
                    match mode {
                        Mode::Chain => "a chain of dispatches",
                        Mode::Grid => "one dispatch, grid barriers",
                        Mode::Unsynced => "one dispatch, no barrier",
                        Mode::GridAtomic => "grid barriers, atomic words",
                        Mode::UnsyncedAtomic => "no barrier, atomic words",
                    },
                    s * 1e6,
                    wrong,
                    t.elapsed().as_secs_f64() * 1e3
                );
                // the plain words' visibility across workgroups is reported, not asserted: what
                // the probe is for is to show which way works on this device
                if mode == Mode::Chain || mode == Mode::GridAtomic {
                    failed |= wrong != 0;
                    runs += 1;
                }
            }
        }
    }
    assert!(runs > 0, "no adapter matched WGLLM_BENCH_DEVICE={want:?}");
    assert!(!failed, "a chain of dispatches or atomic words read wrong after a step");
}
