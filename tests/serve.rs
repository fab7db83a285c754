//! The serving engine (src/serve/engine.rs) through the model gate's greedy battery, per golden
//! model and device (cpu and every wgpu adapter): `serve::<case>::<device>` runs these in order,
//! the model loaded once, a line each:
//! - alone: each prompt by itself, KV in f32: the oracle's near-tie rule, and exactly the device's
//!   anchor (the tokens the model gate's lone sequence gives, model/lone.rs).
//! - batched: every prompt at once with staggered arrivals and a small random token budget (so
//!   prompts are chunked at random places and share steps with other sequences' decodes): exactly
//!   the tokens of `alone`, and the same bits of each chosen token's logprob (batch invariance).
//! - preempted: the same with a KV pool so small that sequences are preempted and recomputed:
//!   preemptions > 0, exactly the tokens of `alone`.
//! - prefix: prompts sharing a two-block prefix, prefix cache on: hits > 0, exactly the tokens each
//!   prompt gets alone with the cache off (a hybrid model: the cache refused by name).
//! - aborted: one request aborted mid-generation: its blocks freed at once, the others' tokens
//!   exactly those of `alone`, no block held at the end.
//! - kv_f16: KV in f16: the oracle's near-tie rule.
//! - as_run: as `wgllm run` runs its request (one sequence, batch invariance off: the
//!   single-stream kernels and wgpu's lone-prefill tile): the oracle's near-tie rule.
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wgllm::backend::cpu::CpuBackend;
use wgllm::backend::wgpu::WgpuBackend;
use wgllm::backend::BatchInvariance;
use wgllm::parity::{golden, model_gate};
use wgllm::serve::{KvMemory, Request, RequestId, ServeEngine, ServeOptions};
use wgllm::util::Rng;
use wgllm::{Backend, DType, Engine};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn device(name: &str) -> Option<Box<dyn Backend>> {
    if name == "cpu" {
        return Some(Box::new(CpuBackend::new()));
    }
    WgpuBackend::all()
        .into_iter()
        .find(|b| b.name() == name)
        .map(|b| Box::new(b) as Box<dyn Backend>)
}

const CTX: usize = 256;

/// The model loaded once per (model, device) and handed from one scenario's engine to the next.
struct Model {
    path: PathBuf,
    dev: String,
    engine: Option<Engine>,
}

impl Model {
    fn load(path: &Path, dev: &str) -> Result<Model, String> {
        let d = device(dev).ok_or_else(|| format!("device {dev} vanished"))?;
        let mut e = Engine::load(path, d, CTX, &mut |_, _| {}).map_err(|e| e.to_string())?;
        // the battery generates its n tokens whatever they are, EOS included
        e.eos.clear();
        Ok(Model {
            path: path.to_path_buf(),
            dev: dev.to_string(),
            engine: Some(e),
        })
    }

    /// Runs `f` on a serving engine over the model with `opts`.
    fn with<T>(
        &mut self,
        opts: &ServeOptions,
        f: impl FnOnce(&mut ServeEngine) -> Result<T, String>,
    ) -> Result<T, String> {
        let e = match self.engine.take() {
            Some(e) => e,
            None => Model::load(&self.path, &self.dev)?.engine.take().unwrap(),
        };
        let mut s = ServeEngine::new(e, opts).map_err(|e| e.to_string())?;
        let r = f(&mut s);
        self.engine = Some(s.into_engine());
        r
    }
}

/// KV in f32, and the kernels of a many-sequence engine whatever `max_seqs` a scenario sets (batch
/// invariance holds within one family of kernels: where the device has cooperative matrices, the
/// two families give different bits).
fn f32_kv() -> ServeOptions {
    ServeOptions {
        kv_dtype: DType::F32,
        max_seqs: 16,
        kernels: Some(BatchInvariance::ManyRows),
        ..ServeOptions::default()
    }
}

/// Each prompt's (token, its logprob's f32 bits) as generated.
type Gen = Vec<Vec<(u32, u32)>>;

fn tokens(g: &Gen) -> Vec<Vec<u32>> {
    g.iter().map(|v| v.iter().map(|t| t.0).collect()).collect()
}

/// Runs `prompts` (n tokens each, greedy, with the chosen token's logprob) on `s`,
/// adding them `arrive(i)` steps after the start; returns each prompt's tokens.
fn run(
    s: &mut ServeEngine,
    prompts: &[Vec<u32>],
    n: usize,
    arrive: &dyn Fn(usize) -> usize,
    mut abort: Option<(usize, usize)>,
) -> Result<Gen, String> {
    let mut out = vec![Vec::new(); prompts.len()];
    let mut step = 0;
    let mut added = 0;
    loop {
        for (i, p) in prompts.iter().enumerate() {
            if arrive(i) == step {
                let mut r = Request::greedy(i as u64, p.clone(), n);
                r.sampling.logprobs = Some(0);
                s.add(r).map_err(|e| e.to_string())?;
                added += 1;
            }
        }
        if let Some((id, at)) = abort {
            if step == at {
                let before = s.stats();
                if !s.abort(RequestId(id as u64)) {
                    return Err(format!("abort of request {id} at step {at} found nothing"));
                }
                let after = s.stats();
                if after.blocks_used >= before.blocks_used {
                    return Err(format!(
                        "aborting request {id} freed no block ({} used before, {} after)",
                        before.blocks_used, after.blocks_used
                    ));
                }
                abort = None;
            }
        }
        if added == prompts.len() && s.is_idle() {
            break;
        }
        for e in s.step().map_err(|e| e.to_string())? {
            let lp = e.logprob.ok_or("a request asking for logprobs got none")?;
            out[e.id.0 as usize].push((e.token, (lp as f32).to_bits()));
        }
        step += 1;
        if step > 100_000 {
            return Err("no end after 100000 steps".into());
        }
    }
    let st = s.stats();
    if st.blocks_used != 0 {
        return Err(format!(
            "{} blocks still held after every request ended",
            st.blocks_used
        ));
    }
    Ok(out)
}

fn alone(m: &mut Model, prompts: &[Vec<u32>], n: usize, opts: &ServeOptions) -> Result<Gen, String> {
    m.with(opts, |s| {
        prompts
            .iter()
            .map(|p| run(s, std::slice::from_ref(p), n, &|_| 0, None).map(|mut v| v.remove(0)))
            .collect()
    })
}

/// Tokens and their logprobs' bits equal: batch invariance down to the last bit of the logits row.
fn same(what: &str, want: &[Vec<(u32, u32)>], got: &[Vec<(u32, u32)>]) -> Result<(), String> {
    for (p, (a, b)) in want.iter().zip(got).enumerate() {
        if a != b {
            let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)).unwrap_or(0);
            let show = |x: Option<&(u32, u32)>| x.map(|&(t, l)| format!("token {t} logprob {}", f32::from_bits(l)));
            return Err(format!(
                "{what}: prompt {p} position {i}: {:?}, alone {:?} (batch invariance broken)",
                show(b.get(i)),
                show(a.get(i))
            ));
        }
    }
    Ok(())
}

/// A real model (a manifest naming a `model_file`) runs the battery's first 4 prompts, 8 tokens each:
/// the whole battery takes minutes a scenario on the CPU devices of CI.
fn part(m: &golden::Manifest) -> Option<(usize, usize)> {
    m.json.get("model_file").map(|_| (4, 8))
}

/// Every scenario of one model on one device, `alone` first (the others compare with it).
fn scenarios(m: &golden::Manifest, path: &Path, dev: &str) -> Result<(), String> {
    let mut model = Model::load(path, dev)?;
    // the battery's prompts and token count, and the tokens each prompt gets alone (checked against
    // the oracle on the way)
    let mut battery = (Vec::new(), 0);
    let t0 = std::time::Instant::now();
    let mut solo = Gen::new();
    let (solo_tokens, summary) = model_gate::greedy_with(m, part(m), &mut |prompts, n| {
        battery = (prompts.to_vec(), n);
        solo = alone(&mut model, prompts, n, &f32_kv())?;
        Ok(tokens(&solo))
    })?;
    let (prompts, n) = battery;
    model_gate::check_anchor(
        &root().join("tests/anchors"),
        &m.case,
        dev,
        &solo_tokens,
        false,
        part(m).is_some(),
    )
    .map_err(|e| format!("alone: {e}"))?;
    println!(
        "    alone     {summary}; equal to the device's anchor ({:.1}s)",
        t0.elapsed().as_secs_f64()
    );
    for name in ["batched", "preempted", "prefix", "aborted", "kv_f16", "as_run"] {
        let t0 = std::time::Instant::now();
        let r = scenario(name, m, &mut model, &prompts, n, &solo).map_err(|e| format!("{name}: {e}"))?;
        println!("    {name:<9} {r} ({:.1}s)", t0.elapsed().as_secs_f64());
    }
    Ok(())
}

fn scenario(
    name: &str,
    m: &golden::Manifest,
    model: &mut Model,
    prompts: &[Vec<u32>],
    n: usize,
    solo: &[Vec<(u32, u32)>],
) -> Result<String, String> {
    let path = model.path.clone();
    let mut rng = Rng::new(wgllm::util::seed(&format!("{}/{name}/{}", m.case, model.dev)));
    match name {
        "batched" => {
            let budget = 5 + (rng.next_u64() % 36) as usize;
            let opts = ServeOptions {
                max_batch_tokens: budget,
                max_seqs: budget.min(16),
                ..f32_kv()
            };
            let got = model.with(&opts, |s| run(s, prompts, n, &|i| i.saturating_sub(3), None))?;
            same("batched", solo, &got)?;
            Ok(format!(
                "{} prompts, budget {budget} tokens a step, staggered: same tokens and logprob bits",
                prompts.len()
            ))
        }
        "preempted" => {
            // blocks of 4 tokens, room for the longest sequence and one block more: the others are
            // preempted as they grow (short prompts cross block boundaries while generating)
            let longest = prompts.iter().map(|p| p.len()).max().unwrap_or(0) + n;
            let blocks = longest.div_ceil(4) + 1;
            let g = wgllm::serve::KvGeometry::from_config(&s_cfg(&path)?, DType::F32, 4).map_err(|e| e.to_string())?;
            let opts = ServeOptions {
                kv_memory: KvMemory::Bytes(blocks as u64 * g.bytes_per_block()),
                block_size: 4,
                max_batch_tokens: 32,
                ..f32_kv()
            };
            let (got, pre) = model.with(&opts, |s| {
                Ok((run(s, prompts, n, &|_| 0, None)?, s.stats().preemptions))
            })?;
            if pre == 0 {
                return Err(format!("{blocks} blocks and no preemption"));
            }
            same("preempted", solo, &got)?;
            Ok(format!(
                "{blocks} blocks, {pre} preemptions: same tokens and logprob bits"
            ))
        }
        "prefix" => {
            let on = ServeOptions {
                prefix_caching: Some(true),
                max_batch_tokens: 24,
                ..f32_kv()
            };
            if s_cfg(&path)?.hybrid.is_some() {
                // recurrent state cannot be restored from a shared KV block: refused by name
                return match model.with(&on, |_| Ok(())) {
                    Err(e) if e.contains("prefix caching is not supported for") => Ok(format!("refused: {e}")),
                    Err(e) => Err(format!("refused, but not by name: {e}")),
                    Ok(_) => Err("prefix caching accepted for a hybrid model".into()),
                };
            }
            let shared: Vec<u32> = prompts.iter().flatten().copied().take(32).collect();
            let with: Vec<Vec<u32>> = prompts
                .iter()
                .take(6.min(prompts.len()))
                .map(|p| shared.iter().chain(p).copied().collect())
                .collect();
            let off = ServeOptions {
                prefix_caching: Some(false),
                ..f32_kv()
            };
            let want = alone(model, &with, n, &off)?;
            let (got, st) = model.with(&on, |s| Ok((run(s, &with, n, &|i| 2 * i, None)?, s.stats())))?;
            if st.prefix_hits == 0 {
                return Err("prompts sharing a 32-token prefix and no prefix-cache hit".into());
            }
            same("prefix", &want, &got)?;
            Ok(format!(
                "{} prefix hits, {} misses: same tokens and logprob bits",
                st.prefix_hits, st.prefix_misses
            ))
        }
        "aborted" => {
            let got = model.with(&f32_kv(), |s| run(s, prompts, n, &|_| 0, Some((1, n / 2))))?;
            let others: Vec<usize> = (0..prompts.len()).filter(|&i| i != 1).collect();
            let pick = |v: &[Vec<(u32, u32)>]| others.iter().map(|&i| v[i].clone()).collect::<Vec<_>>();
            same("aborted", &pick(solo), &pick(&got))?;
            Ok(format!(
                "request 1 aborted at step {}: blocks freed, the others' tokens unchanged",
                n / 2
            ))
        }
        "kv_f16" => {
            let opts = ServeOptions {
                kv_dtype: DType::F16,
                ..f32_kv()
            };
            let (_, summary) = model_gate::greedy_with(m, part(m), &mut |prompts, n| {
                alone(model, prompts, n, &opts).map(|g| tokens(&g))
            })?;
            Ok(format!("KV in f16: {summary}"))
        }
        "as_run" => {
            // `wgllm run`'s engine (src/cli/run/generate.rs): one sequence, the single-stream
            // kernels (batch invariance off: the lone-prefill tile, the linears by M)
            let opts = ServeOptions {
                max_seqs: 1,
                prefix_caching: Some(false),
                kernels: Some(BatchInvariance::Off),
                ..f32_kv()
            };
            if opts.invariance() != BatchInvariance::Off {
                return Err(format!(
                    "one sequence runs {:?}, not the single-stream kernels",
                    opts.invariance()
                ));
            }
            let (_, summary) = model_gate::greedy_with(m, part(m), &mut |prompts, n| {
                alone(model, prompts, n, &opts).map(|g| tokens(&g))
            })?;
            Ok(format!(
                "as `wgllm run` (one sequence, single-stream kernels): {summary}"
            ))
        }
        _ => unreachable!(),
    }
}

fn s_cfg(model: &Path) -> Result<wgllm::model::config::Config, String> {
    if model.is_file() {
        let g = wgllm::model::gguf::Gguf::open(model).map_err(|e| e.to_string())?;
        return wgllm::model::gguf_config::config_from_gguf(&g).map_err(|e| e.to_string());
    }
    wgllm::model::config::Config::from_file(&model.join("config.json")).map_err(|e| e.to_string())
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let goldens = root().join("goldens");
    let pending = golden::pending(&goldens);
    let mut names: Vec<String> = vec!["cpu".into()];
    names.extend(WgpuBackend::all().iter().map(|b| b.name()));
    let require = std::env::var("WGLLM_REQUIRE_MODELS").is_ok_and(|v| v == "1");
    let mut trials = Vec::new();
    for path in golden::manifests(&goldens) {
        let Ok(m) = golden::check(&path, &pending) else {
            continue;
        };
        if !golden::has_model_gate(&m) {
            continue;
        }
        let model = model_gate::model_path(&m, &root());
        let m = Arc::new(m);
        for dev in &names {
            let name = format!("serve::{}::{dev}", m.case);
            let (m, model, dev) = (m.clone(), model.clone(), dev.clone());
            trials.push(Trial::ignorable_test(name, move || {
                let model = match model {
                    Ok(p) => p,
                    Err(why) if !require => return Ok(Completion::ignored_with(format!("skipped: {why}"))),
                    Err(why) => return Err(Failed::from(why)),
                };
                scenarios(&m, &model, &dev).map_err(Failed::from)?;
                Ok(Completion::Completed)
            }));
        }
    }
    let c = libtest_mimic::run(&args, trials);
    println!(
        "{} passed, {} failed, {} skipped",
        c.num_passed, c.num_failed, c.num_ignored
    );
    if c.num_passed == 0 && args.filter.is_none() {
        println!("no serving comparison ran");
        return std::process::ExitCode::FAILURE;
    }
    if c.has_failed() {
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
