//! qwen3_5::forward_paged, the tiny Qwen3.5 golden model in the batched engine (paged KV pools for
//! the full-attention layers, state slots for the linear ones), on cpu and every wgpu adapter:
//! - `batch_of_one_matches_the_anchor`: each gate prompt as a batch of one (the whole prompt, then
//!   greedy decode steps) gives exactly the device's anchor tokens (tests/anchors/qwen3_5-tiny),
//!   which were recorded through the contiguous cache the engine had before (its prefill ran
//!   gdn_chunked, the batched path the recurrent form for every token; the f32 state rounding
//!   differed with it, but not by enough to move a greedy token of the tiny model), and which the
//!   model gate now checks through a lone sequence (model/lone.rs), a batch of one like these;
//! - `batched_equals_alone`: two sequences packed together, their prompts cut into different
//!   chunks, in different slots and blocks, give bit-identical logits at every position to each
//!   sequence run alone (its prompt, then decode steps; see max_rows for wgpu's linear), under the
//!   FewRows batch invariance a serving engine of several sequences sets.
//!
//! The host side of a step (block tables, slots, descriptors) is built here as the scheduler would
//! build it, and checked with op::check_paged_batch / check_state_batch before upload.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use wgllm::backend::{cpu::CpuBackend, wgpu::WgpuBackend, Backend, BatchInvariance};
use wgllm::dtype::DType;
use wgllm::engine::Engine;
use wgllm::model::arch::Weights;
use wgllm::model::paged::{Batch, KvPools};
use wgllm::model::qwen3_5::{self, HybridState, HybridWorkspace};
use wgllm::op::{check_paged_batch, check_state_batch, paged_slot, state_seq_words, SEQ_FIELDS, STATE_SEQ_FIELDS};
use wgllm::tensor::Tensor;

const BS: usize = 16;
const MAX_CTX: usize = 512;
const MB: usize = MAX_CTX / BS;
const NUM_BLOCKS: usize = 64;
const MAX_SEQS: usize = 4;
const T_MAX: usize = 192;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn devices() -> Vec<Box<dyn Backend>> {
    let mut v: Vec<Box<dyn Backend>> = vec![Box::new(CpuBackend::new())];
    v.extend(WgpuBackend::all().into_iter().map(|b| Box::new(b) as Box<dyn Backend>));
    v
}

/// The tensors of a golden safetensors file: name -> (dtype, shape, f32 or i32 values as f64).
fn golden(file: &str) -> HashMap<String, (Vec<usize>, Vec<f64>)> {
    let b = std::fs::read(root().join("goldens/qwen3_5-tiny").join(file)).unwrap();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    let h: serde_json::Value = serde_json::from_slice(&b[8..8 + n]).unwrap();
    let data = &b[8 + n..];
    let mut out = HashMap::new();
    for (name, info) in h.as_object().unwrap() {
        if name == "__metadata__" {
            continue;
        }
        let shape: Vec<usize> = serde_json::from_value(info["shape"].clone()).unwrap();
        let off: Vec<usize> = serde_json::from_value(info["data_offsets"].clone()).unwrap();
        let raw = &data[off[0]..off[1]];
        let vals: Vec<f64> = raw
            .chunks(4)
            .map(|c| {
                let w = [c[0], c[1], c[2], c[3]];
                match info["dtype"].as_str().unwrap() {
                    "I32" => i32::from_le_bytes(w) as f64,
                    "F32" => f32::from_le_bytes(w) as f64,
                    d => panic!("{file}: tensor {name} of dtype {d}"),
                }
            })
            .collect();
        out.insert(name.clone(), (shape, vals));
    }
    out
}

/// The model, its pools, state slots and workspace on one device.
struct Model {
    e: Engine,
    pools: KvPools,
    state: HybridState,
    ws: HybridWorkspace,
    /// free blocks, handed out from the back (a seeded shuffle: never in position order)
    free: Vec<u32>,
}

/// A running sequence: every token known so far, how many the model has seen, its slot and blocks.
struct Seq {
    tokens: Vec<u32>,
    done: usize,
    slot: u32,
    blocks: Vec<u32>,
}

impl Model {
    fn load(dev: Box<dyn Backend>) -> Model {
        let e = Engine::load(&root().join("goldens/qwen3_5-tiny/model"), dev, MAX_CTX, &mut |_, _| {}).unwrap();
        let d = e.dev.as_ref();
        // the mode a serving engine of several sequences sets: with it off, a lone prefill chunk
        // may take kernels of its own (wgpu's prefill tile), whose bits the batched rows need not match
        d.set_batch_invariant(BatchInvariance::FewRows);
        let pools = qwen3_5::kv_pools(&e.cfg, d, NUM_BLOCKS, BS, DType::F32).unwrap();
        let state = HybridState::new(&e.cfg, d, MAX_SEQS).unwrap();
        let ws = HybridWorkspace::new(&e.cfg, d, T_MAX, T_MAX).unwrap();
        let mut free: Vec<u32> = (0..NUM_BLOCKS as u32).collect();
        let mut r = wgllm::util::Rng::new(7);
        for i in (1..free.len()).rev() {
            free.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
        }
        Model {
            e,
            pools,
            state,
            ws,
            free,
        }
    }

    fn u32s(&self, shape: &[usize], v: &[u32]) -> Tensor {
        let t = self.e.dev.alloc(DType::U32, shape).unwrap();
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.e.dev.upload(&t, &b).unwrap();
        t
    }

    /// One step: `pieces` (sequence, token count) packed in this order, each continuing where its
    /// sequence stopped. Returns the logits of every row, as (sequence, position, logits).
    fn step(&mut self, seqs: &mut [Seq], pieces: &[(usize, usize)]) -> Vec<(usize, usize, Vec<f32>)> {
        let (mut ids, mut pos, mut slots, mut tables, mut words, mut state_slots) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut row = 0u32;
        for &(s, n) in pieces {
            let q = &mut seqs[s];
            let end = q.done + n;
            while q.blocks.len() * BS < end {
                q.blocks.push(self.free.pop().expect("a free block"));
            }
            for p in q.done..end {
                ids.push(q.tokens[p]);
                pos.push(p as u32);
                slots.push(paged_slot(&q.blocks, BS, p));
            }
            let mut t = q.blocks.clone();
            t.resize(MB, NUM_BLOCKS as u32 + 9); // not a block: nothing past kv_len is read
            tables.extend(t);
            words.extend([row, n as u32, end as u32]);
            state_slots.push(q.slot);
            row += n as u32;
        }
        let t = row as usize;
        let paged = check_paged_batch("test", t, NUM_BLOCKS, BS, &tables, MB, &words).unwrap();
        let sw = state_seq_words(&paged, &state_slots);
        check_state_batch("test", t, MAX_SEQS, &sw).unwrap();
        let s = pieces.len();
        let rows: Vec<u32> = (0..t as u32).collect();
        let b = Batch {
            t,
            s,
            r: t,
            ids: self.u32s(&[t], &ids),
            positions: self.u32s(&[t], &pos),
            slots: self.u32s(&[t], &slots),
            block_tables: self.u32s(&[s, MB], &tables),
            seqs: self.u32s(&[s, SEQ_FIELDS], &words),
            sample_rows: self.u32s(&[t], &rows),
        };
        let st = self.u32s(&[s, STATE_SEQ_FIELDS], &sw);
        let Weights::Qwen3_5(w) = &self.e.weights else {
            panic!("not a Qwen3.5 model")
        };
        let dev = self.e.dev.as_ref();
        qwen3_5::forward_paged(
            w,
            &self.ws,
            &self.pools,
            &self.state,
            &b,
            &st,
            &self.e.cfg,
            dev,
            &mut |_, _, _| Ok(()),
        )
        .unwrap();
        dev.flush().unwrap();
        let v = self.e.cfg.vocab_size;
        let all = DType::F32.decode_f32(&dev.download(&self.ws.logits.view(0, &[t, v]).unwrap()).unwrap());
        let mut out = Vec::new();
        let mut r = 0;
        for &(s, n) in pieces {
            for p in seqs[s].done..seqs[s].done + n {
                out.push((s, p, all[r * v..(r + 1) * v].to_vec()));
                r += 1;
            }
            seqs[s].done += n;
        }
        out
    }
}

/// The lowest index of the row maximum (Op::Argmax's rule).
fn argmax(x: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] {
            best = i;
        }
    }
    best as u32
}

/// Greedy: the prompt as one chunk, then `n - 1` decode steps; the `n` tokens.
fn greedy(m: &mut Model, prompt: &[u32], n: usize, slot: u32) -> Vec<u32> {
    let mut seqs = vec![Seq {
        tokens: prompt.to_vec(),
        done: 0,
        slot,
        blocks: vec![],
    }];
    let mut out = Vec::new();
    let mut piece = prompt.len();
    while out.len() < n {
        let rows = m.step(&mut seqs, &[(0, piece)]);
        let tok = argmax(&rows.last().unwrap().2);
        out.push(tok);
        seqs[0].tokens.push(tok);
        piece = 1;
    }
    m.free.extend(seqs[0].blocks.drain(..));
    out
}

#[test]
fn batch_of_one_matches_the_anchor() {
    let g = golden("greedy.safetensors");
    let (oracle, shape) = (&g["tokens"].1, &g["tokens"].0);
    let (top_ids, top_lp) = (&g["top_ids"].1, &g["top_logprobs"].1);
    let (np, nn) = (shape[0], shape[1]);
    let k = top_lp.len() / (np * nn);
    for dev in devices() {
        let name = dev.name();
        let path = root()
            .join("tests/anchors/qwen3_5-tiny")
            .join(format!("{}.json", name.replace('/', "-")));
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("SKIP {name}: no anchor {}", path.display());
            continue;
        };
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        let anchor: Vec<Vec<u32>> = serde_json::from_value(j["tokens"].clone()).unwrap();
        let mut m = Model::load(dev);
        let mut ties = 0;
        for p in 0..np {
            let prompt: Vec<u32> = g[&format!("prompt_{p:02}")].1.iter().map(|&x| x as u32).collect();
            // slots reused by later prompts: a slot's old state must not leak into a fresh sequence
            let ours = greedy(&mut m, &prompt, nn, (p % MAX_SEQS) as u32);
            assert_eq!(
                ours,
                anchor[p],
                "{name} prompt {p} (len {}): the batched path's greedy tokens differ from the anchor",
                prompt.len()
            );
            // and, as the gate says of the anchor, within the oracle's near-tie band
            if let Some(i) = (0..nn).find(|&i| ours[i] != oracle[p * nn + i] as u32) {
                let base = (p * nn + i) * k;
                let j = (0..k)
                    .find(|&j| top_ids[base + j] as u32 == ours[i])
                    .unwrap_or_else(|| {
                        panic!(
                            "{name} prompt {p} position {i}: token {} outside the oracle's top-{k}",
                            ours[i]
                        )
                    });
                assert!(
                    top_lp[base] - top_lp[base + j] <= 0.5,
                    "{name} prompt {p} position {i}: not a near tie"
                );
                ties += 1;
            }
        }
        println!("{name}: {np} prompts x {nn} tokens equal the anchor ({ties} near-tie divergences from the oracle)");
    }
}

#[test]
fn batched_equals_alone() {
    // prompts 14 (100 tokens) and 9 (31 tokens) of the gate
    let g = golden("greedy.safetensors");
    let prompt = |p: usize| -> Vec<u32> { g[&format!("prompt_{p:02}")].1.iter().map(|&x| x as u32).collect() };
    let (pa, pb) = (prompt(14), prompt(9));
    let gen = 6;
    for dev in devices() {
        let name = dev.name();
        // Every op of the step is row-invariant on every device (linear included: the matvec for
        // every M), so the alone prompt goes in one piece whatever its length.
        let _ = &name;
        let max_rows = usize::MAX;
        let mut m = Model::load(dev);
        // alone: the prompt (in pieces of at most max_rows) then decode steps (greedy), every
        // row's logits kept
        let mut alone = HashMap::new();
        let mut full = Vec::new();
        for (s, p, slot) in [(0, &pa, 1u32), (1, &pb, 3u32)] {
            let toks = greedy(&mut m, p, gen, slot);
            let mut all = p.clone();
            all.extend(&toks);
            let mut seqs = vec![Seq {
                tokens: all.clone(),
                done: 0,
                slot,
                blocks: vec![],
            }];
            let mut pieces: Vec<usize> = (0..p.len())
                .step_by(max_rows.min(p.len()))
                .map(|a| max_rows.min(p.len() - a))
                .collect();
            pieces.extend(std::iter::repeat_n(1, gen - 1));
            for n in pieces {
                for (_, pos, l) in m.step(&mut seqs, &[(0, n)]) {
                    alone.insert((s, pos), l);
                }
            }
            m.free.extend(seqs[0].blocks.drain(..));
            full.push(all);
        }
        // batched: both at once, the prompts cut differently, the order in the batch changing
        let mut seqs = vec![
            Seq {
                tokens: full[0].clone(),
                done: 0,
                slot: 2,
                blocks: vec![],
            },
            Seq {
                tokens: full[1].clone(),
                done: 0,
                slot: 0,
                blocks: vec![],
            },
        ];
        let mut steps: Vec<Vec<(usize, usize)>> = vec![
            vec![(0, 10), (1, 1)],
            vec![(1, 20), (0, 30)],
            vec![(0, 50), (1, 10)],
            vec![(1, 1), (0, 10)],
        ];
        steps.extend((0..gen - 2).map(|i| {
            if i % 2 == 0 {
                vec![(0, 1), (1, 1)]
            } else {
                vec![(1, 1), (0, 1)]
            }
        }));
        steps.push(vec![(0, 1)]);
        let mut compared = 0;
        for step in &steps {
            for (s, pos, l) in m.step(&mut seqs, step) {
                let want = &alone[&(s, pos)];
                if let Some(i) = (0..l.len()).find(|&i| l[i].to_bits() != want[i].to_bits()) {
                    panic!(
                        "{name}: sequence {s} position {pos} (step {step:?}): logit {i} is {} batched, {} alone",
                        l[i], want[i]
                    );
                }
                compared += 1;
            }
        }
        assert_eq!(
            compared,
            full[0].len() + full[1].len() - 2,
            "{name}: positions compared"
        );
        println!("{name}: {compared} positions bit-identical batched and alone");
    }
}
