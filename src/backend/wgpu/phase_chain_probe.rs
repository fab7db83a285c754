//! `WGLLM_BENCH_DEVICE=nvidia cargo test --release --lib phase_chain_probe -- --ignored --nocapture`:
//! what a chain of dependent matvecs (x_{p+1} = W_p x_p, bf16 W of K x K, f32 x) costs a phase
//! four ways: a dispatch a phase (what a decode step records), one dispatch whose workgroups
//! meet at a grid barrier between phases (grid_sync_probe.rs: x through atomic words, which read
//! right across workgroups where plain loads did not), the same with each workgroup's weight
//! rows of the next phase loaded into registers before it waits at the barrier, so the weights'
//! latency and most of their bytes overlap the wait, and dispatches of several phases whose
//! workgroups (a phase a row of the grid) each load their weights and then wait for the phases
//! before (no residency needed: the rows before started first). A decode step's projections are
//! such a chain (a Qwen3-0.6B layer's are 2-12 MB each, each dispatch ~5 us besides its bytes);
//! this says what a
//! persistent decode kernel could save before one is built. The weights of all phases together
//! exceed L2, so each phase reads its own from memory as a model does. Every mode's last x is
//! checked against the CPU (f64). A grid barrier needs every workgroup resident at once: the
//! grids stay at or below two workgroups of 256 an SM of an H200, and at two on a CPU adapter
//! (lavapipe runs a workgroup a thread, one thread a core).
use super::probe_kit::{self as kit, Stamps};
use super::WgpuBackend;
use crate::backend::Backend;
use crate::parity::case::{input, Init};
use crate::parity::compare::{compare, Tol};
use std::time::Instant;

/// The probe's kernels for K x K weights and R rows a workgroup: 256 threads, thread t holding
/// 16-byte word v % TPR (8 weights) of rows v / TPR + RS j (j < P) in registers wr{j}, v its place
/// in the workgroup by subgroup.
fn source(k: usize, r: usize) -> String {
    let kv = k / 8;
    let tpr = kv.min(256);
    let rs = 256 / tpr;
    let passes = r / rs;
    assert!(
        k % 8 == 0 && 256 % tpr == 0 && r % rs == 0 && passes > 0,
        "K {k}, R {r}"
    );
    let mut decl = String::new();
    let mut load = String::new();
    let mut dots = String::new();
    for j in 0..passes {
        decl += &format!("var<private> wr{j}: vec4<u32>;\n");
        load += &format!("    wr{j} = w[base + ({j}u * RS + t / TPR) * KV + t % TPR];\n");
        dots += &format!(
            "    {{ let s = sg_sum(dot(lo(wr{j}), x0) + dot(hi(wr{j}), x1), sgs); if (sgi == 0u) {{ red[{j}u * 32u + sgid] = s; }} }}\n"
        );
    }
    format!(
        r#"
// flags: 1 the next phase's weights loaded before the wait, 2 every invocation waits (else thread 0,
// then the workgroup at a barrier)
struct P {{ phase0: u32, phases: u32, groups: u32, flags: u32 }}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;
// x of phase ph at (ph % 2) * K, its y (the next phase's x) at the other half
@group(0) @binding(2) var<storage, read_write> act: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> bar: array<atomic<u32>>;

const K = {k}u;
const KV = {kv}u;
const TPR = {tpr}u;
const RS = {rs}u;
const R = {r}u;
const PASSES = {passes}u;

var<workgroup> xs: array<f32, K>;
var<workgroup> red: array<f32, PASSES * 32u>;
{decl}
fn sg_sum(v: f32, sgs: u32) -> f32 {{
    var s = v;
    for (var d = sgs / 2u; d > 0u; d >>= 1u) {{
        s += subgroupShuffleXor(s, d);
    }}
    return s;
}}

// the 8 bf16 weights of a word as two vec4s: even elements' halves first
fn lo(v: vec4<u32>) -> vec4<f32> {{
    return vec4<f32>(bitcast<f32>(v.x << 16u), bitcast<f32>(v.x & 0xffff0000u), bitcast<f32>(v.y << 16u), bitcast<f32>(v.y & 0xffff0000u));
}}
fn hi(v: vec4<u32>) -> vec4<f32> {{
    return vec4<f32>(bitcast<f32>(v.z << 16u), bitcast<f32>(v.z & 0xffff0000u), bitcast<f32>(v.w << 16u), bitcast<f32>(v.w & 0xffff0000u));
}}

fn load_w(ph: u32, g: u32, t: u32) {{
    let base = (ph * K + g * R) * KV;
{load}}}

// y rows g R .. g R + R of phase ph from x through workgroup memory and the registers' weights.
// v = sgid * sgs + sgi numbers the weight words, so a row's TPR words lie in whole subgroups
// whatever order the device numbers invocations in; t only shares out the staging and the sums.
fn phase(ph: u32, g: u32, t: u32, v: u32, sgi: u32, sgs: u32, sgid: u32) {{
    let src = (ph % 2u) * K;
    let dst = K - src;
    for (var i = t; i < K; i += 256u) {{
        xs[i] = bitcast<f32>(atomicLoad(&act[src + i]));
    }}
    workgroupBarrier();
    let c = (v % TPR) * 8u;
    let x0 = vec4<f32>(xs[c], xs[c + 1u], xs[c + 2u], xs[c + 3u]);
    let x1 = vec4<f32>(xs[c + 4u], xs[c + 5u], xs[c + 6u], xs[c + 7u]);
{dots}    workgroupBarrier();
    let per = TPR / sgs;   // subgroups a row
    if (t < R) {{
        let j = t / RS;
        let q = t % RS;
        var y = 0.0;
        for (var i = 0u; i < per; i++) {{
            y += red[j * 32u + q * per + i];
        }}
        atomicStore(&act[dst + g * R + t], bitcast<u32>(y));
    }}
}}

@compute @workgroup_size(256)
fn one(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32,
       @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
       @builtin(subgroup_id) sgid: u32) {{
    let v = sgid * sgs + sgi;
    load_w(p.phase0, wid.x, v);
    phase(p.phase0, wid.x, t, v, sgi, sgs, sgid);
}}

@compute @workgroup_size(256)
fn persistent(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32,
              @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
              @builtin(subgroup_id) sgid: u32) {{
    let g = wid.x;
    let v = sgid * sgs + sgi;
    let ahead = (p.flags & 1u) != 0u;
    if (ahead) {{
        load_w(p.phase0, g, v);
    }}
    for (var i = 0u; i < p.phases; i++) {{
        let ph = p.phase0 + i;
        if (!ahead) {{
            load_w(ph, g, v);
        }}
        phase(ph, g, t, v, sgi, sgs, sgid);
        // arrive (y stored and fenced), load the next phase's weights, then wait for the grid
        storageBarrier();
        if (t == 0u) {{
            atomicAdd(&bar[0], 1u);
        }}
        if (ahead && i + 1u < p.phases) {{
            load_w(ph + 1u, g, v);
        }}
        if (t == 0u || (p.flags & 2u) != 0u) {{
            let goal = (i + 1u) * p.groups;
            loop {{
                if (atomicLoad(&bar[0]) - goal < 0x80000000u) {{
                    break;
                }}
            }}
        }}
        storageBarrier();
    }}
}}

// A dispatch of several phases, phase phase0 + y in workgroup row y: each workgroup loads its
// weights, then waits until every workgroup of the phases before has arrived. Devices start a
// dispatch's workgroups in index order, so every row a workgroup waits for is running or done
// and the wait ends; the weights' latency overlaps the phases before.
@compute @workgroup_size(256)
fn stream(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32,
          @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32,
          @builtin(subgroup_id) sgid: u32) {{
    let g = wid.x;
    let ph = p.phase0 + wid.y;
    let v = sgid * sgs + sgi;
    load_w(ph, g, v);
    if (wid.y > 0u && (t == 0u || (p.flags & 2u) != 0u)) {{
        let goal = ph * p.groups;
        loop {{
            if (atomicLoad(&bar[0]) - goal < 0x80000000u) {{
                break;
            }}
        }}
    }}
    storageBarrier();
    phase(ph, g, t, v, sgi, sgs, sgid);
    storageBarrier();
    if (t == 0u) {{
        atomicAdd(&bar[0], 1u);
    }}
}}
"#
    )
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Chain,
    Grid,
    GridPrefetch,
    /// GridPrefetch with every invocation waiting at the grid barrier itself. On lavapipe, with
    /// thread 0 waiting for its workgroup, two workgroups over 24 phases read a wrong x in one run
    /// of three to eight (with workgroup barriers added before the arrival and after the wait
    /// too); with every invocation waiting, in none of 12. The cause is not found; the H200 read
    /// right with thread 0 waiting (grid_sync_probe).
    GridPrefetchAll,
    /// Dispatches of this many phases each (`stream`), thread 0 waiting for its workgroup (every
    /// invocation on a CPU adapter, as above).
    Stream(usize),
}

const SLOT: u64 = 256;

/// GPU seconds a phase over `phases` phases of K x K weights in `mode`, and the last x.
fn run(b: &WgpuBackend, k: usize, r: usize, phases: usize, mode: Mode, w: &wgpu::Buffer, x0: &[u8]) -> (f64, Vec<u8>) {
    let (d, q) = (&b.device, &b.queue);
    let groups = (k / r) as u32;
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("phase_chain_probe"),
        source: wgpu::ShaderSource::Wgsl(source(k, r).into()),
    });
    let (layout, pl) = kit::layout(d, &[true, false, false]);
    let entry = match mode {
        Mode::Chain => "one",
        Mode::Stream(_) => "stream",
        _ => "persistent",
    };
    let pipe = kit::pipeline(d, &pl, &module, entry);
    let cpu = b.info.device_type == wgpu::DeviceType::Cpu;
    use wgpu::BufferUsages as U;
    let buf = |size: u64, usage: wgpu::BufferUsages| kit::buf(d, size, usage);
    let act = buf(8 * k as u64, U::STORAGE | U::COPY_SRC | U::COPY_DST);
    let bar = buf(256, U::STORAGE | U::COPY_DST);
    let params = buf(SLOT * phases as u64, U::UNIFORM | U::COPY_DST);
    let read = buf(16 + 4 * k as u64, U::MAP_READ | U::COPY_DST);
    let stamps = Stamps::new(d);
    let mut pw = vec![0u8; (SLOT * phases as u64) as usize];
    for s in 0..phases {
        let words: [u32; 4] = match mode {
            Mode::Chain => [s as u32, 1, groups, 0],
            Mode::Grid => [0, phases as u32, groups, 0],
            Mode::GridPrefetch => [0, phases as u32, groups, 1],
            Mode::GridPrefetchAll => [0, phases as u32, groups, 3],
            Mode::Stream(n) => [(s * n) as u32, 1, groups, if cpu { 2 } else { 0 }],
        };
        pw[s * SLOT as usize..][..16].copy_from_slice(bytemuck::cast_slice(&words));
    }
    q.write_buffer(&params, 0, &pw);
    q.write_buffer(&bar, 0, &[0u8; 256]);
    q.write_buffer(&act, 0, x0);
    let bg = kit::bind(d, &layout, &params, &[w, &act, &bar]);
    let mut enc = d.create_command_encoder(&Default::default());
    {
        let mut pass = stamps.pass(&mut enc);
        pass.set_pipeline(&pipe);
        if mode == Mode::Chain {
            for s in 0..phases as u32 {
                pass.set_bind_group(0, &bg, &[s * SLOT as u32]);
                pass.dispatch_workgroups(groups, 1, 1);
            }
        } else if let Mode::Stream(n) = mode {
            for s in 0..(phases / n) as u32 {
                pass.set_bind_group(0, &bg, &[s * SLOT as u32]);
                pass.dispatch_workgroups(groups, n as u32, 1);
            }
        } else {
            pass.set_bind_group(0, &bg, &[0]);
            pass.dispatch_workgroups(groups, 1, 1);
        }
    }
    stamps.resolve(&mut enc, &read);
    // the last x: phase `phases` reads it at (phases % 2) * K
    enc.copy_buffer_to_buffer(&act, 4 * ((phases % 2) * k) as u64, &read, 16, 4 * k as u64);
    let (secs, x) = kit::finish(b, enc, &read);
    (secs / phases as f64, x)
}

/// x after `phases` phases on the CPU, f64 sums, each phase's y rounded to f32 as the kernels
/// store it.
fn reference(k: usize, phases: usize, w: &[u8], x0: &[u8]) -> Vec<u8> {
    let wf = crate::dtype::DType::BF16.decode_f32(w);
    let mut x = crate::dtype::DType::F32.decode_f32(x0)[..k].to_vec();
    for ph in 0..phases {
        let m = &wf[ph * k * k..(ph + 1) * k * k];
        x = (0..k)
            .map(|r| (0..k).map(|c| m[r * k + c] as f64 * x[c] as f64).sum::<f64>() as f32)
            .collect();
    }
    crate::dtype::DType::F32.encode_f32(&x)
}

#[test]
#[ignore = "a GPU measurement, run by hand on the machine it measures (see the top of this file)"]
fn phase_chain_probe() {
    let want = std::env::var("WGLLM_BENCH_DEVICE")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut runs = 0;
    let mut fails = vec![];
    for b in WgpuBackend::all().into_iter().filter(|b| b.name().contains(&want)) {
        if !b.caps.timestamp_query || !b.caps.subgroup {
            println!("{}: skipped (timestamp queries or subgroups missing)", b.name());
            continue;
        }
        let cpu = b.info.device_type == wgpu::DeviceType::Cpu;
        // (K, R): K x K weights, R rows a workgroup (K / R workgroups)
        let shapes: &[(usize, usize)] = if cpu {
            &[(256, 256), (256, 128)]
        } else {
            &[(1024, 8), (1024, 4), (2048, 16), (2048, 8)]
        };
        for &(k, r) in shapes {
            let bytes = k * k * 2;
            // enough phases that their weights stream from memory (past a 50 MB L2), at least 8
            let phases = if cpu {
                24
            } else {
                ((256usize << 20) / bytes).clamp(8, 256)
            };
            let w = input(
                crate::dtype::DType::BF16,
                &[phases * k, k],
                Init::Normal {
                    seed: k as u64,
                    std: 1.0 / (k as f32).sqrt(),
                },
            )
            .bytes();
            let mut x0 = input(crate::dtype::DType::F32, &[k], Init::Normal { seed: 7, std: 1.0 }).bytes();
            x0.resize(8 * k, 0);
            let want_x = reference(k, phases, &w, &x0);
            let wb = b.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: w.len() as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            b.queue.write_buffer(&wb, 0, &w);
            // (a CPU adapter's two workgroups only where every invocation waits: above)
            let modes: &[Mode] = if cpu && k / r > 1 {
                &[Mode::Chain, Mode::GridPrefetchAll, Mode::Stream(2), Mode::Stream(8)]
            } else {
                &[
                    Mode::Chain,
                    Mode::Grid,
                    Mode::GridPrefetch,
                    Mode::Stream(2),
                    Mode::Stream(4),
                    Mode::Stream(8),
                    Mode::Stream(phases),
                ]
            };
            for &mode in modes {
                let warm = match mode {
                    Mode::Stream(n) => Mode::Stream(n.min(8)),
                    m => m,
                };
                run(&b, k, r, phases.min(8), warm, &wb, &x0); // compile, first touch
                let t = Instant::now();
                let (s, x) = run(&b, k, r, phases, mode, &wb, &x0);
                let check = compare(crate::dtype::DType::F32, &x, &want_x, Tol::Nmse(1e-9));
                println!(
                    "{}: K {k:>5} ({:>4} workgroups of {r} rows), {phases:>3} phases as {:<32} {:>7.2} us a phase (GPU), {:>6.0} GB/s, {}, {:.1} ms wall",
                    b.name(),
                    k / r,
                    match mode {
                        Mode::Chain => "a chain of dispatches".to_string(),
                        Mode::Grid => "one dispatch, grid barriers".to_string(),
                        Mode::GridPrefetch => "grid barriers, weights loaded ahead".to_string(),
                        Mode::GridPrefetchAll => "the same, every invocation waiting".to_string(),
                        Mode::Stream(n) => format!("dispatches of {n} phases in rows"),
                    },
                    s * 1e6,
                    bytes as f64 / s / 1e9,
                    match &check {
                        Ok(c) => format!("nmse {:.1e}", c.nmse),
                        Err(e) => format!("WRONG ({e})"),
                    },
                    t.elapsed().as_secs_f64() * 1e3
                );
                if check.is_err() {
                    let (g, wv) = (
                        crate::dtype::DType::F32.decode_f32(&x),
                        crate::dtype::DType::F32.decode_f32(&want_x),
                    );
                    let bad: Vec<usize> = (0..k).filter(|&i| (g[i] - wv[i]).abs() > 1e-3).collect();
                    println!(
                        "  rows wrong: {} (first {:?}, last {:?})",
                        bad.len(),
                        bad.first(),
                        bad.last()
                    );
                }
                if let Err(e) = check {
                    fails.push(format!("{} K {k} R {r} {mode:?}: {e}", b.name()));
                }
                runs += 1;
            }
        }
    }
    assert!(runs > 0, "no adapter matched WGLLM_BENCH_DEVICE={want:?}");
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}
