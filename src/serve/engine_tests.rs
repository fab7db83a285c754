//! The serving engine's sampling: a seeded request draws the same tokens (and logprobs) alone and
//! among others, on every device, with `Op::Sample` on the device.
use super::*;
use crate::backend::cpu::CpuBackend;
use crate::backend::wgpu::WgpuBackend;
use crate::backend::Backend;
use crate::serve::SamplingParams;

fn devices() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(CpuBackend::new())];
    v.extend(WgpuBackend::all().into_iter().map(|b| Box::new(b) as Box<dyn Backend>));
    v
}

fn engine(dev: Box<dyn Backend>) -> ServeEngine {
    let dir = crate::model::default::dir().unwrap();
    let mut e = Engine::load(&dir, dev, 128, &mut |_, _| {}).unwrap();
    e.eos.clear();
    let opts = ServeOptions {
        kv_dtype: DType::F32,
        max_seqs: 8,
        ..ServeOptions::default()
    };
    ServeEngine::new(e, &opts).unwrap()
}

fn request(id: u64, prompt: &[u32], temperature: f32, seed: u64, logprobs: Option<usize>) -> Request {
    Request {
        id: RequestId(id),
        prompt: prompt.to_vec(),
        max_tokens: 12,
        stop_token_ids: vec![],
        sampling: SamplingParams {
            temperature,
            top_k: 50,
            top_p: 0.95,
            seed,
            logprobs,
        },
    }
}

type Out = (Vec<u32>, Vec<Option<f64>>, Vec<Vec<(u32, f64)>>);

fn outputs(events: &[Event]) -> Out {
    (
        events.iter().map(|e| e.token).collect(),
        events.iter().map(|e| e.logprob).collect(),
        events.iter().map(|e| e.top.clone()).collect(),
    )
}

const PROMPT: [u32; 6] = [97, 11, 187, 0, 374, 264];

#[test]
fn a_seeded_request_samples_alike_alone_and_in_a_batch() {
    for dev in devices() {
        let name = dev.name();
        let mut s = engine(dev);
        let run_alone = |s: &mut ServeEngine, seed: u64| {
            s.add(request(1, &PROMPT, 1.5, seed, Some(3))).unwrap();
            outputs(&s.run_to_end().unwrap()[&RequestId(1)])
        };
        let alone = run_alone(&mut s, 42);
        let other_seed = run_alone(&mut s, 43);
        // the batch: neighbours greedy and sampled at other temperatures, the request arriving later
        for (id, t) in [(2, 0.0), (3, 0.8), (4, 2.0)] {
            s.add(request(id, &PROMPT[..4 + id as usize % 2], t, id, None)).unwrap();
        }
        let mut events: Vec<Event> = Vec::new();
        for step in 0.. {
            if step == 2 {
                s.add(request(1, &PROMPT, 1.5, 42, Some(3))).unwrap();
            }
            events.extend(s.step().unwrap());
            if step > 2 && s.is_idle() {
                break;
            }
        }
        let mine: Vec<Event> = events.into_iter().filter(|e| e.id == RequestId(1)).collect();
        let batched = outputs(&mine);
        assert_eq!(alone.0.len(), 12, "{name}");
        assert_eq!(batched, alone, "{name}: seed 42 alone vs in a batch");
        assert_ne!(other_seed.0, alone.0, "{name}: seeds 42 and 43 drew the same tokens");
        // logprobs were asked: the chosen token's and three alternatives, descending
        for (lp, top) in alone.1.iter().zip(&alone.2) {
            assert!(lp.is_some_and(|l| l <= 0.0) && top.len() == 3, "{name}: {lp:?} {top:?}");
            assert!(top[0].1 >= top[1].1 && top[1].1 >= top[2].1, "{name}: {top:?}");
        }
    }
}

/// The CPU backend with a binding limit on the KV pools and a switch that makes `Op::Sample`
/// fail: what a small device and a failing step look like to the engine.
struct Limited {
    cpu: CpuBackend,
    max_blocks: usize,
    fail_sample: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Backend for Limited {
    fn name(&self) -> String {
        "limited-cpu".into()
    }
    fn supports(&self, desc: &crate::op::OpDesc) -> crate::backend::Support {
        if matches!(desc.op, Op::KvWrite) && desc.outputs[0].shape[0] > self.max_blocks {
            return crate::backend::Support::No("a pool over the binding limit".into());
        }
        self.cpu.supports(desc)
    }
    fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        self.cpu.alloc(dtype, shape)
    }
    fn upload(&self, t: &Tensor, bytes: &[u8]) -> Result<()> {
        self.cpu.upload(t, bytes)
    }
    fn download(&self, t: &Tensor) -> Result<Vec<u8>> {
        self.cpu.download(t)
    }
    fn run(&self, op: &Op, i: &[&Tensor], o: &[&Tensor]) -> Result<()> {
        if matches!(op, Op::Sample { .. }) && self.fail_sample.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Other("the device failed".into()));
        }
        self.cpu.run(op, i, o)
    }
    fn flush(&self) -> Result<()> {
        self.cpu.flush()
    }
}

#[test]
fn a_pool_over_the_device_limit_is_capped_and_a_failed_step_is_recovered() {
    let switch = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dev = Limited {
        cpu: CpuBackend::new(),
        max_blocks: 5,
        fail_sample: switch.clone(),
    };
    let dir = crate::model::default::dir().unwrap();
    let e = Engine::load(&dir, Box::new(dev), 128, &mut |_, _| {}).unwrap();
    let mut s = ServeEngine::new(e, &ServeOptions::default()).unwrap();
    assert_eq!(s.stats().blocks_total, 5, "capped at what the device binds");
    let fail = |_: &ServeEngine, on: bool| switch.store(on, std::sync::atomic::Ordering::Relaxed);
    s.add(request(1, &PROMPT, 0.0, 1, None)).unwrap();
    fail(&s, true);
    assert!(s.step().is_err());
    let st = s.stats();
    assert_eq!((st.running, st.blocks_used, st.aborted), (0, 0, 1), "{st:?}");
    fail(&s, false);
    s.add(request(2, &PROMPT, 0.0, 1, None)).unwrap();
    let out = s.run_to_end().unwrap();
    assert_eq!(out[&RequestId(2)].len(), 12, "the engine goes on after a failed step");
}

/// The kernel family: FewRows below MANY_ROWS_FROM_SEQS sequences a step, ManyRows from it, and a
/// pinned family whatever `max_seqs` is (the serving battery pins ManyRows so that a scenario whose
/// budget caps `max_seqs` compares like with like); Off is honoured for one sequence only.
#[test]
fn kernel_family_by_max_seqs_unless_pinned() {
    use crate::backend::BatchInvariance::*;
    let with = |max_seqs, kernels| ServeOptions {
        max_seqs,
        kernels,
        ..ServeOptions::default()
    };
    assert_eq!(with(1, None).invariance(), FewRows);
    assert_eq!(with(MANY_ROWS_FROM_SEQS - 1, None).invariance(), FewRows);
    assert_eq!(with(MANY_ROWS_FROM_SEQS, None).invariance(), ManyRows);
    assert_eq!(ServeOptions::default().invariance(), ManyRows);
    assert_eq!(with(1, Some(ManyRows)).invariance(), ManyRows);
    assert_eq!(with(64, Some(FewRows)).invariance(), FewRows);
    // invariance off only where no step can hold a second sequence (`wgllm run`'s one request)
    assert_eq!(with(1, Some(Off)).invariance(), Off);
    assert_eq!(with(2, Some(Off)).invariance(), FewRows);
    assert_eq!(with(64, Some(Off)).invariance(), ManyRows);
}
