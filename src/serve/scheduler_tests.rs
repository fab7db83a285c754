//! Unit tests of the scheduler: packing, chunking, refusals, finish reasons, abort, preemption,
//! prefix hits and the schedule/commit protocol. (The randomized run is in sim_tests.rs.)
use super::scheduler::PENDING_TOKEN;
use super::*;

fn cfg(num_blocks: usize, max_batch_tokens: usize, max_seqs: usize) -> SchedulerConfig {
    SchedulerConfig {
        block_size: 4,
        num_blocks,
        max_batch_tokens,
        max_seqs,
        max_model_len: 64,
        eos_token_ids: vec![99],
        prefix_caching: true,
        recurrent_state: None,
    }
}

fn prompt(n: usize, base: u32) -> Vec<u32> {
    (0..n as u32).map(|i| base + i).collect()
}

/// Commits a plan, sampling `token` for every sampling sequence.
fn commit_all(s: &mut Scheduler, plan: &StepPlan, token: u32) -> Vec<TokenEvent> {
    let sampled = plan.seqs.iter().filter(|p| p.sample).map(|p| (p.id, token)).collect();
    let ev = s.commit(&StepResult { sampled }).unwrap();
    s.check_invariants().unwrap();
    ev
}

#[test]
fn packs_decodes_and_chunks_under_the_budget() {
    let mut s = Scheduler::new(cfg(32, 16, 8)).unwrap();
    s.add(Request::greedy(0, prompt(10, 1), 5)).unwrap();
    s.add(Request::greedy(1, prompt(5, 50), 5)).unwrap();
    s.add(Request::greedy(2, prompt(20, 100), 5)).unwrap();
    let p = s.schedule().unwrap();
    let lens: Vec<_> = p.seqs.iter().map(|q| (q.tokens.len(), q.sample)).collect();
    assert_eq!(
        lens,
        [(10, true), (5, true), (1, false)],
        "16 tokens: two prompts and one token of the third"
    );
    assert_eq!(p.seqs[1].positions, [0, 1, 2, 3, 4]);
    let b = &p.seqs[1].block_table;
    assert_eq!(
        p.seqs[1].slots[4],
        b[1] * 4,
        "position 4 is offset 0 of the second block"
    );
    assert_eq!(p.sample_rows(), [9, 14]);
    assert_eq!(p.query_starts(), [0, 10, 15, 16]);
    assert_eq!(p.seqs.iter().map(|q| q.state_slot).collect::<Vec<_>>(), [0, 1, 2]);
    commit_all(&mut s, &p, 7);
    let p = s.schedule().unwrap();
    let lens: Vec<_> = p
        .seqs
        .iter()
        .map(|q| (q.tokens.len(), q.sample, q.positions[0]))
        .collect();
    assert_eq!(
        lens,
        [(1, true, 10), (1, true, 5), (14, false, 1)],
        "decodes first, then the chunk"
    );
    assert_eq!(p.seqs[0].tokens, [7], "the decode feeds the token sampled last step");
    assert_eq!(p.seqs[0].generated, 1);
    commit_all(&mut s, &p, 7);
    let p = s.schedule().unwrap();
    assert_eq!(
        (p.seqs[2].tokens.len(), p.seqs[2].sample, p.seqs[2].context_len),
        (5, true, 20)
    );
}

#[test]
fn sequence_cap_and_fcfs() {
    let mut s = Scheduler::new(cfg(32, 64, 2)).unwrap();
    for i in 0..3 {
        s.add(Request::greedy(i, prompt(3, 10 * i as u32), 4)).unwrap();
    }
    let p = s.schedule().unwrap();
    assert_eq!(p.seqs.iter().map(|q| q.id.0).collect::<Vec<_>>(), [0, 1]);
    assert_eq!((s.stats().running, s.stats().waiting), (2, 1));
}

#[test]
fn refusals_name_their_reason() {
    // 4 blocks of 4: 16 KV slots
    let mut s = Scheduler::new(cfg(4, 16, 4)).unwrap();
    let reason = |r: Result<(), ServeError>| match r {
        Err(ServeError::Refused { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason(s.add(Request::greedy(0, vec![], 4))), RefuseReason::EmptyPrompt);
    assert_eq!(
        reason(s.add(Request::greedy(0, vec![1], 0))),
        RefuseReason::ZeroMaxTokens
    );
    // 10 + 7 = 17 tokens, the last never fed: 16 slots fit exactly; one more does not
    s.add(Request::greedy(0, prompt(10, 1), 7)).unwrap();
    assert_eq!(reason(s.add(Request::greedy(0, vec![1], 1))), RefuseReason::DuplicateId);
    assert_eq!(
        reason(s.add(Request::greedy(1, prompt(10, 1), 8))),
        RefuseReason::TooManyBlocks {
            tokens: 17,
            needed: 5,
            pool: 4
        }
    );
    let mut s = Scheduler::new(cfg(100, 16, 4)).unwrap();
    assert_eq!(
        reason(s.add(Request::greedy(1, prompt(64, 1), 1))),
        RefuseReason::PromptTooLong {
            prompt: 64,
            max_model_len: 64
        }
    );
    // max_tokens past the context is not refused: it stops at the context (see finish_reasons)
    s.add(Request::greedy(2, prompt(63, 1), 1000)).unwrap();
    let e = ServeError::Refused {
        id: RequestId(3),
        reason: RefuseReason::EmptyPrompt,
    };
    assert_eq!(e.to_string(), "request 3 refused: the prompt is empty");
}

#[test]
fn bad_configs_are_named() {
    let mut c = cfg(8, 16, 4);
    c.recurrent_state = Some("qwen3_5_text".into());
    let e = Scheduler::new(c.clone()).err().unwrap();
    assert_eq!(
        e,
        ServeError::PrefixCacheUnsupported {
            model: "qwen3_5_text".into()
        }
    );
    assert!(e.to_string().contains("qwen3_5_text") && e.to_string().contains("recurrent"));
    c.prefix_caching = false;
    assert!(
        Scheduler::new(c).is_ok(),
        "the hybrid model runs without prefix caching"
    );
    let mut c = cfg(8, 3, 4);
    assert!(matches!(
        Scheduler::new(c.clone()),
        Err(ServeError::Config {
            field: "--max-batch-tokens",
            ..
        })
    ));
    c.max_batch_tokens = 16;
    c.num_blocks = 0;
    assert!(matches!(
        Scheduler::new(c),
        Err(ServeError::Config {
            field: "num_blocks",
            ..
        })
    ));
}

#[test]
fn finish_reasons() {
    let mut s = Scheduler::new(cfg(64, 128, 8)).unwrap();
    s.add(Request::greedy(0, prompt(3, 1), 10)).unwrap(); // eos
    let mut r = Request::greedy(1, prompt(3, 1), 10);
    r.stop_token_ids = vec![5];
    s.add(r).unwrap(); // stop
    s.add(Request::greedy(2, prompt(3, 1), 2)).unwrap(); // max_tokens
    s.add(Request::greedy(3, prompt(62, 1), 10)).unwrap(); // context 64: two tokens
    let p = s.schedule().unwrap();
    let sampled = vec![
        (RequestId(0), 99),
        (RequestId(1), 5),
        (RequestId(2), 6),
        (RequestId(3), 6),
    ];
    let ev = s.commit(&StepResult { sampled }).unwrap();
    let fin: Vec<_> = ev.iter().map(|e| e.finish).collect();
    assert_eq!(fin, [Some(FinishReason::Eos), Some(FinishReason::Stop), None, None]);
    assert_eq!(p.seqs.len(), 4);
    let p = s.schedule().unwrap();
    let ev = commit_all(&mut s, &p, 6);
    let fin: Vec<_> = ev.iter().map(|e| (e.id.0, e.finish)).collect();
    assert_eq!(fin, [(2, Some(FinishReason::Length)), (3, Some(FinishReason::Length))]);
    assert!(s.is_idle());
    assert_eq!(s.stats().finished, 4);
}

#[test]
fn abort_frees_everything_at_once() {
    let mut s = Scheduler::new(cfg(16, 64, 4)).unwrap();
    s.add(Request::greedy(0, prompt(13, 1), 20)).unwrap();
    s.add(Request::greedy(1, prompt(5, 1), 20)).unwrap();
    let p = s.schedule().unwrap();
    commit_all(&mut s, &p, 3);
    assert_eq!(s.stats().blocks_used, 4 + 2);
    assert!(s.abort(RequestId(0)));
    s.check_invariants().unwrap();
    assert_eq!(s.stats().blocks_used, 2, "request 0's 4 blocks released at once");
    // abort while a step is in flight: the commit skips it and needs no token for it
    let _ = s.schedule().unwrap();
    assert!(s.abort(RequestId(1)));
    assert!(s.commit(&StepResult::default()).unwrap().is_empty());
    let st = s.stats();
    assert_eq!(
        (st.blocks_used, st.blocks_free + st.blocks_cached, st.aborted),
        (0, 16, 2)
    );
    assert!(!s.abort(RequestId(1)), "unknown now");
    s.add(Request::greedy(2, prompt(5, 1), 20)).unwrap();
    assert!(s.abort(RequestId(2)), "a waiting request aborts too");
    assert!(s.is_idle());
    s.check_invariants().unwrap();
}

#[test]
fn newest_is_preempted_and_recomputed() {
    // 6 blocks of 4; two requests of 8-token prompts take 2 blocks each, then grow
    let mut s = Scheduler::new(cfg(6, 64, 4)).unwrap();
    s.add(Request::greedy(0, prompt(8, 1), 16)).unwrap();
    s.add(Request::greedy(1, prompt(8, 30), 16)).unwrap();
    let mut steps = 0;
    while s.stats().preemptions == 0 {
        let p = s.schedule().unwrap();
        commit_all(&mut s, &p, 2);
        steps += 1;
        assert!(steps < 20);
    }
    let st = s.stats();
    assert_eq!((st.running, st.waiting), (1, 1));
    assert_eq!(s.running[0].req.id, RequestId(0), "the older one keeps running");
    let w = &s.waiting[0];
    assert_eq!((w.req.id, w.blocks.len(), w.computed), (RequestId(1), 0, 0));
    let known = w.tokens.len();
    assert!(known > 8, "its generated tokens are kept for the recompute");
    // run to the end: the preempted one comes back as one prefill of prompt + generated, from 0
    // (request 0 grew to the whole pool meanwhile, evicting its cached blocks), sampling at its end
    let mut recompute = None;
    while !s.is_idle() {
        let p = s.schedule().unwrap();
        if let Some(q) = p.seqs.iter().find(|q| q.id == RequestId(1) && q.tokens.len() > 1) {
            recompute.get_or_insert((q.positions[0], q.tokens.len(), q.sample, q.generated));
        }
        commit_all(&mut s, &p, 2);
    }
    assert_eq!(recompute, Some((0, known, true, known - 8)));
    assert_eq!(s.stats().blocks_used, 0);
}

#[test]
fn shared_prefix_hits_and_never_covers_the_whole_prompt() {
    let mut s = Scheduler::new(cfg(16, 64, 4)).unwrap();
    s.add(Request::greedy(0, prompt(8, 1), 1)).unwrap();
    let p = s.schedule().unwrap();
    commit_all(&mut s, &p, 2);
    assert_eq!(s.stats().blocks_cached, 2, "two full blocks kept idle");
    // the same 8 tokens: only the first block may be reused, the last token must be computed
    s.add(Request::greedy(1, prompt(8, 1), 1)).unwrap();
    s.add(Request::greedy(2, [prompt(8, 1), vec![40]].concat(), 1)).unwrap();
    let p = s.schedule().unwrap();
    assert_eq!(p.seqs[0].positions[0], 4);
    assert_eq!(p.seqs[1].positions[0], 8);
    assert_eq!(p.seqs[0].block_table[0], p.seqs[1].block_table[0], "shared block");
    s.check_invariants().unwrap();
    let st = s.stats();
    assert_eq!(
        (st.prefix_hits, st.prefix_misses),
        (3, 1),
        "first: 0 of 1; second: 1 of 1; third: 2 of 2"
    );
    commit_all(&mut s, &p, 2);
}

#[test]
fn protocol_is_enforced() {
    let mut s = Scheduler::new(cfg(16, 64, 4)).unwrap();
    assert!(matches!(s.commit(&StepResult::default()), Err(ServeError::Protocol(_))));
    s.add(Request::greedy(0, prompt(3, 1), 5)).unwrap();
    let p = s.schedule().unwrap();
    assert!(matches!(s.schedule(), Err(ServeError::Protocol(_))));
    let e = s.commit(&StepResult::default()).unwrap_err().to_string();
    assert!(e.contains("no sampled token for request 0"), "{e}");
    let stray = StepResult {
        sampled: vec![(RequestId(0), 1), (RequestId(9), 1)],
    };
    assert!(s.commit(&stray).is_err());
    assert_eq!(
        commit_all(&mut s, &p, 1).len(),
        1,
        "the step stayed in flight through the errors"
    );
}

#[test]
fn for_model_turns_prefix_caching_off_for_the_hybrid() {
    let load = |name: &str| {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("goldens/{name}/model/config.json"));
        crate::model::config::Config::from_file(&p).unwrap()
    };
    let c = SchedulerConfig::for_model(&load("qwen3_5-tiny"), 64);
    assert_eq!(
        (c.prefix_caching, c.recurrent_state.as_deref()),
        (false, Some("qwen3_5_text"))
    );
    assert_eq!((c.max_model_len, c.eos_token_ids.as_slice()), (512, &[511][..]));
    assert!(Scheduler::new(c.clone()).is_ok());
    let on = SchedulerConfig {
        prefix_caching: true,
        ..c
    };
    assert!(matches!(
        Scheduler::new(on),
        Err(ServeError::PrefixCacheUnsupported { .. })
    ));
    let c = SchedulerConfig::for_model(&load("qwen3-tiny"), 64);
    assert!(c.prefix_caching && c.recurrent_state.is_none());
}

/// Commits the oldest step in flight, sampling `token` for every sampling sequence of `plan`.
fn commit_ahead(s: &mut Scheduler, plan: &StepPlan, token: u32) -> Vec<TokenEvent> {
    commit_all(s, plan, token)
}

#[test]
fn an_ahead_step_decodes_the_tokens_in_flight() {
    let mut s = Scheduler::new(cfg(32, 64, 8)).unwrap();
    s.add(Request::greedy(0, prompt(3, 1), 10)).unwrap();
    s.add(Request::greedy(1, prompt(4, 50), 10)).unwrap();
    assert!(s.schedule_ahead().is_none(), "nothing in flight");
    let p0 = s.schedule().unwrap();
    let a = s.schedule_ahead().expect("both sample in the step in flight");
    s.check_invariants().unwrap();
    assert!(s.schedule_ahead().is_none(), "at most two steps in flight");
    assert!(matches!(s.schedule(), Err(ServeError::Protocol(_))));
    let got: Vec<_> = a
        .seqs
        .iter()
        .map(|q| (q.id.0, q.tokens.clone(), q.positions[0], q.generated))
        .collect();
    assert_eq!(got, [(0, vec![PENDING_TOKEN], 3, 1), (1, vec![PENDING_TOKEN], 4, 1)]);
    // position 4 of request 1 opens its second block, taken now
    assert_eq!(a.seqs[1].block_table.len(), 2);
    assert_eq!(a.seqs[1].slots[0], a.seqs[1].block_table[1] * 4);
    let ev = commit_all(&mut s, &p0, 7);
    assert_eq!(ev.len(), 2);
    let ev = commit_ahead(&mut s, &a, 8);
    assert_eq!(ev.iter().map(|e| e.token).collect::<Vec<_>>(), [8, 8]);
    s.check_invariants().unwrap();
    // the next plain step feeds the ahead step's tokens
    let p = s.schedule().unwrap();
    assert_eq!(
        p.seqs.iter().map(|q| (q.tokens[0], q.positions[0])).collect::<Vec<_>>(),
        [(8, 4), (8, 5)]
    );
}

#[test]
fn a_sequence_that_stops_in_flight_drops_its_ahead_token() {
    let mut s = Scheduler::new(cfg(32, 64, 8)).unwrap();
    s.add(Request::greedy(0, prompt(4, 1), 10)).unwrap();
    s.add(Request::greedy(1, prompt(4, 50), 10)).unwrap();
    let p0 = s.schedule().unwrap();
    let a = s.schedule_ahead().unwrap();
    // request 0 samples EOS (99) in the step in flight; request 1 goes on
    let ev = s
        .commit(&StepResult {
            sampled: vec![(RequestId(0), 99), (RequestId(1), 7)],
        })
        .unwrap();
    assert_eq!(ev[0].finish, Some(FinishReason::Eos));
    s.check_invariants().unwrap();
    let ev = commit_ahead(&mut s, &a, 8);
    assert_eq!(
        ev.iter().map(|e| e.id.0).collect::<Vec<_>>(),
        [1],
        "request 0's ahead token is dropped"
    );
    s.check_invariants().unwrap();
    assert_eq!(s.stats().running, 1);
    let _ = p0;
}

#[test]
fn no_ahead_step_when_one_would_do_something_else() {
    // a request that finishes by length in the step in flight
    let mut s = Scheduler::new(cfg(32, 64, 8)).unwrap();
    s.add(Request::greedy(0, prompt(4, 1), 1)).unwrap();
    let _ = s.schedule().unwrap();
    assert!(s.schedule_ahead().is_none(), "its last token is in flight");
    // somebody waiting
    let mut s = Scheduler::new(cfg(32, 4, 2)).unwrap();
    s.add(Request::greedy(0, prompt(4, 1), 5)).unwrap();
    s.add(Request::greedy(1, prompt(4, 50), 5)).unwrap();
    let _ = s.schedule().unwrap();
    assert!(s.schedule_ahead().is_none(), "request 1 waits");
    // a chunk that samples nothing
    let mut s = Scheduler::new(cfg(32, 3, 2)).unwrap();
    s.add(Request::greedy(0, prompt(6, 1), 5)).unwrap();
    let _ = s.schedule().unwrap();
    assert!(s.schedule_ahead().is_none(), "a prefill chunk in flight");
    // no free block for the new tokens
    let mut s = Scheduler::new(cfg(2, 8, 8)).unwrap();
    s.add(Request::greedy(0, prompt(4, 1), 5)).unwrap();
    s.add(Request::greedy(1, prompt(3, 50), 2)).unwrap();
    let _ = s.schedule().unwrap();
    assert!(s.schedule_ahead().is_none(), "position 4 needs a second block");
}
