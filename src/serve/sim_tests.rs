//! Randomized simulation of the scheduler against a fake model that keeps its "KV cache" in a pool
//! of token slots exactly as the engine will: each step writes the planned tokens to their slots,
//! then a sampling sequence reads its whole context back through its block table. So a wrong slot,
//! a block handed to two sequences, a block freed while still in use or a bad recompute after
//! preemption changes the context the model sees, hence its tokens, and the run fails.
use super::scheduler::PENDING_TOKEN;
use super::*;
use crate::util::Rng;
use std::collections::{HashMap, HashSet};

const VOCAB: u64 = 40;
const EOS: u32 = 0;

/// The fake model: the next token is a hash of the whole context.
fn next_token(ctx: &[u32]) -> u32 {
    let h = ctx.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &t| {
        (h ^ t as u64).wrapping_mul(0x100_0000_01b3)
    });
    ((h ^ (h >> 29)) % VOCAB) as u32
}

/// What a request must produce, run alone without any scheduler.
fn expected(req: &Request, eos: &[u32], max_len: usize) -> (Vec<u32>, FinishReason) {
    let mut ctx = req.prompt.clone();
    let mut out = vec![];
    loop {
        let t = next_token(&ctx);
        ctx.push(t);
        out.push(t);
        if eos.contains(&t) {
            return (out, FinishReason::Eos);
        }
        if req.stop_token_ids.contains(&t) {
            return (out, FinishReason::Stop);
        }
        if out.len() >= req.max_tokens || ctx.len() >= max_len {
            return (out, FinishReason::Length);
        }
    }
}

/// Runs a plan on the fake KV pool: (token, position) per slot.
fn run_step(s: &Scheduler, kv: &mut [Option<(u32, u32)>], plan: &StepPlan) -> StepResult {
    let bs = s.cfg.block_size as u32;
    for p in &plan.seqs {
        for ((&t, &pos), &slot) in p.tokens.iter().zip(&p.positions).zip(&p.slots) {
            assert_eq!(
                slot,
                p.block_table[(pos / bs) as usize] * bs + pos % bs,
                "{}: slot of {pos}",
                p.id
            );
            assert!(
                !s.cache.is_cached(slot / bs),
                "{}: write into shared block {}",
                p.id,
                slot / bs
            );
            kv[slot as usize] = Some((t, pos));
        }
    }
    let mut sampled = vec![];
    for p in plan.seqs.iter().filter(|p| p.sample) {
        let ctx: Vec<u32> = (0..p.context_len as u32)
            .map(|q| {
                let slot = p.block_table[(q / bs) as usize] * bs + q % bs;
                match kv[slot as usize] {
                    Some((t, pos)) if pos == q => t,
                    other => panic!("{}: position {q} reads slot {slot} holding {other:?}", p.id),
                }
            })
            .collect();
        sampled.push((p.id, next_token(&ctx)));
    }
    StepResult { sampled }
}

struct Sim {
    num_blocks: usize,
    prefix_caching: bool,
    requests: usize,
    abort_p: f64,
}

fn simulate(seed: u64, sim: &Sim) -> Stats {
    let mut rng = Rng::new(seed);
    let cfg = SchedulerConfig {
        block_size: 4,
        num_blocks: sim.num_blocks,
        max_batch_tokens: 16,
        max_seqs: 6,
        max_model_len: 48,
        eos_token_ids: vec![EOS],
        prefix_caching: sim.prefix_caching,
        recurrent_state: None,
    };
    let mut s = Scheduler::new(cfg.clone()).unwrap();
    let mut kv = vec![None; cfg.num_blocks * cfg.block_size];
    let mut tokens = |n: usize| -> Vec<u32> { (0..n).map(|_| 1 + (rng.next_u64() % (VOCAB - 1)) as u32).collect() };
    let (p0, p1) = (tokens(9), tokens(16));
    // the third starts with the second's second block: the same tokens at other positions, which
    // only a key chained to its parent keeps apart
    let p2 = [&p1[4..], &tokens(11)[..]].concat();
    let prefixes = [p0, p1, p2];
    let mut want = HashMap::new();
    let mut got: HashMap<RequestId, Vec<u32>> = HashMap::new();
    let mut reasons = HashMap::new();
    let mut aborted = HashSet::new();
    let mut added = 0;
    let mut aheads = 0;
    for _step in 0..20_000 {
        // random arrivals, prompts often sharing a prefix
        while added < sim.requests && rng.uniform() < 0.4 {
            let mut prompt = if rng.uniform() < 0.7 {
                prefixes[(rng.next_u64() % 3) as usize].clone()
            } else {
                vec![]
            };
            let extra = 1 + (rng.next_u64() % 12) as usize;
            prompt.extend((0..extra).map(|_| 1 + (rng.next_u64() % (VOCAB - 1)) as u32));
            let mut req = Request::greedy(added as u64, prompt, 1 + (rng.next_u64() % 24) as usize);
            if rng.uniform() < 0.3 {
                req.stop_token_ids = vec![7];
            }
            want.insert(req.id, expected(&req, &cfg.eos_token_ids, cfg.max_model_len));
            s.add(req).unwrap();
            added += 1;
        }
        if added == sim.requests && s.is_idle() {
            break;
        }
        let plan = s.schedule().unwrap();
        s.check_invariants()
            .unwrap_or_else(|e| panic!("seed {seed} after schedule {}: {e}", plan.step));
        assert!(plan.num_tokens() <= cfg.max_batch_tokens && plan.seqs.len() <= cfg.max_seqs);
        let result = run_step(&s, &mut kv, &plan);
        // half the time the next step is planned before this one is committed (a pipelined
        // engine): its pending ids are this step's picks, as the device would feed them
        let mut steps = vec![(plan.step, result)];
        if rng.uniform() < 0.5 {
            if let Some(mut ahead) = s.schedule_ahead() {
                s.check_invariants()
                    .unwrap_or_else(|e| panic!("seed {seed} after schedule_ahead {}: {e}", ahead.step));
                for q in &mut ahead.seqs {
                    assert_eq!(q.tokens, [PENDING_TOKEN]);
                    q.tokens = vec![steps[0].1.sampled.iter().find(|x| x.0 == q.id).expect("sampled").1];
                }
                steps.push((ahead.step, run_step(&s, &mut kv, &ahead)));
                aheads += 1;
            }
        }
        // an abort while the step is in flight, or between steps
        if rng.uniform() < sim.abort_p && !plan.seqs.is_empty() {
            let id = plan.seqs[(rng.next_u64() % plan.seqs.len() as u64) as usize].id;
            assert!(s.abort(id));
            aborted.insert(id);
            s.check_invariants()
                .unwrap_or_else(|e| panic!("seed {seed} after abort of {id}: {e}"));
        }
        for (step, result) in steps {
            for e in s.commit(&result).unwrap() {
                assert!(!aborted.contains(&e.id), "a token for aborted request {}", e.id);
                assert!(
                    !reasons.contains_key(&e.id),
                    "a token for request {} after its finish",
                    e.id
                );
                got.entry(e.id).or_default().push(e.token);
                if let Some(r) = e.finish {
                    assert!(reasons.insert(e.id, r).is_none(), "request {} finished twice", e.id);
                }
            }
            s.check_invariants()
                .unwrap_or_else(|e| panic!("seed {seed} after commit {step}: {e}"));
        }
    }
    assert!(s.is_idle(), "seed {seed}: not done after 20000 steps: {:?}", s.stats());
    for (id, (tokens, reason)) in &want {
        if aborted.contains(id) {
            continue;
        }
        assert_eq!(got.get(id), Some(tokens), "seed {seed}: request {id}'s tokens");
        assert_eq!(
            reasons.get(id),
            Some(reason),
            "seed {seed}: request {id}'s finish reason"
        );
    }
    let st = s.stats();
    assert_eq!(st.blocks_used, 0, "seed {seed}: blocks still held at the end: {st:?}");
    assert_eq!(
        st.blocks_free + st.blocks_cached,
        st.blocks_total,
        "seed {seed}: {st:?}"
    );
    assert_eq!(st.finished + st.aborted, sim.requests as u64);
    assert!(aheads > 0, "seed {seed}: no step was planned ahead");
    st
}

#[test]
fn tiny_pool_preempts_and_shares_prefixes() {
    let sim = Sim {
        num_blocks: 16,
        prefix_caching: true,
        requests: 60,
        abort_p: 0.03,
    };
    let (mut pre, mut hits, mut ev) = (0, 0, 0);
    for seed in 0..12 {
        let st = simulate(seed, &sim);
        pre += st.preemptions;
        hits += st.prefix_hits;
        ev += st.prefix_evictions;
    }
    eprintln!("12 runs: {pre} preemptions, {hits} prefix hits, {ev} evictions");
    assert!(
        pre > 0 && hits > 0 && ev > 0,
        "preemptions {pre}, hits {hits}, evictions {ev}"
    );
}

#[test]
fn tiny_pool_without_prefix_cache() {
    let sim = Sim {
        num_blocks: 14,
        prefix_caching: false,
        requests: 60,
        abort_p: 0.03,
    };
    for seed in 100..112 {
        let st = simulate(seed, &sim);
        assert!(st.preemptions > 0, "seed {seed}: {st:?}");
        assert_eq!((st.prefix_hits, st.blocks_cached), (0, 0));
    }
}

#[test]
fn roomy_pool_never_preempts() {
    let sim = Sim {
        num_blocks: 6 * 12,
        prefix_caching: true,
        requests: 40,
        abort_p: 0.0,
    };
    for seed in 200..206 {
        let st = simulate(seed, &sim);
        assert_eq!(st.preemptions, 0, "seed {seed}");
        assert!(st.prefix_hits > 0, "seed {seed}: {st:?}");
    }
}
