//! The hybrid-state ops: causal_conv1d_batch, gdn_batch and gdn_conv_norm (Qwen3.5's
//! linear-attention layers over a packed batch with per-sequence state slots). Batches are built
//! by `StateLayout`: sequences given as (token count, fresh), their slots a seeded choice among
//! the pool's (never in order), spare slots left over. Every slot no sequence continues starts NaN: a fresh sequence's slot
//! (which the op must not read) and the spare ones (which must come back NaN, untouched).
//! Ragged counts, length 1, fresh and continued states, counts 63, 64, 65 and 130 (at and across
//! GDN_CHUNK = 64: the batch op runs the recurrent form throughout, so nothing may change there).
use super::{normal, seed, DType};
use crate::op::{Op, TensorDesc, STATE_SEQ_FIELDS};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

/// A batch of sequences over a state pool of `n` slots.
#[derive(Clone, Debug)]
pub struct StateLayout {
    /// (token count, fresh) per sequence
    pub seqs: Vec<(usize, bool)>,
    /// each sequence's slot
    pub slots: Vec<usize>,
    pub n: usize,
}

impl StateLayout {
    /// Slots drawn from a seeded shuffle of 0..S+spare.
    pub fn new(seqs: &[(usize, bool)], spare: usize, seed: u64) -> StateLayout {
        let n = seqs.len() + spare;
        let mut order: Vec<usize> = (0..n).collect();
        let mut r = Rng::new(seed);
        for i in (1..n).rev() {
            order.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
        }
        StateLayout {
            seqs: seqs.to_vec(),
            slots: order[..seqs.len()].to_vec(),
            n,
        }
    }

    pub fn t(&self) -> usize {
        self.seqs.iter().map(|s| s.0).sum()
    }

    /// The seqs operand: [first row, count, slot, fresh] per sequence.
    pub fn words(&self) -> Vec<u32> {
        let mut v = Vec::new();
        let mut row = 0;
        for (&(count, fresh), &slot) in self.seqs.iter().zip(&self.slots) {
            v.extend([row as u32, count as u32, slot as u32, fresh as u32]);
            row += count;
        }
        v
    }

    /// Pool contents ([n, per_slot]): N(0, std) in the slots of continued sequences, NaN elsewhere.
    pub fn pool(&self, per_slot: usize, seed: u64, std: f64) -> Vec<f32> {
        let mut v = vec![f32::NAN; self.n * per_slot];
        let mut r = Rng::new(seed);
        for (&(_, fresh), &slot) in self.seqs.iter().zip(&self.slots) {
            if !fresh {
                for x in &mut v[slot * per_slot..(slot + 1) * per_slot] {
                    *x = (r.normal() * std) as f32;
                }
            }
        }
        v
    }

    /// Tag text: counts with f for fresh (`63f+1+64`), the pool's slots.
    fn tag(&self) -> String {
        let s: Vec<String> = if self.seqs.len() > 8 {
            vec![format!("{}seqs", self.seqs.len())]
        } else {
            self.seqs
                .iter()
                .map(|&(c, f)| format!("{c}{}", if f { "f" } else { "" }))
                .collect()
        };
        format!("{},N{}", s.join("+"), self.n)
    }
}

/// The batches: one decode, one fresh token, ragged decodes mixing fresh and continued, prefill
/// chunks at and across 64, a mix of chunks and decodes, many decodes, lone prefill chunks.
fn scenarios() -> Vec<(Vec<(usize, bool)>, usize)> {
    let mut r = Rng::new(seed("state-batch-many"));
    let many: Vec<(usize, bool)> = (0..20).map(|_| (1, r.next_u64() % 4 == 0)).collect();
    vec![
        (vec![(1, false)], 2),
        (vec![(1, true)], 0),
        (vec![(1, false), (1, true), (1, false), (1, false), (1, true)], 3),
        (vec![(63, true), (1, false), (64, false), (65, true)], 2),
        (vec![(7, false), (1, false), (130, false), (1, true), (2, false)], 1),
        (many, 4),
        // one sequence over a pool of one slot, several tokens: wgpu's lone prefill under
        // invariance off (the chunked form), fresh and continued, across a chunk
        (vec![(100, true)], 0),
        (vec![(130, false)], 0),
        (vec![(5, false)], 0),
    ]
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // (C, K): the tiny model's conv (256 channels), odd sizes, K 2
    for (c, k) in [(256, 4), (13, 4), (7, 2)] {
        for (x, w) in [
            (DType::F32, DType::F32),
            (DType::F32, DType::BF16),
            (DType::BF16, DType::BF16),
        ] {
            for (seqs, spare) in scenarios() {
                v.push(conv_case(x, w, c, k, &seqs, spare));
            }
        }
    }
    // (nk, nv, dk, dv): the tiny model's heads; r = 3 with dk != dv; odd sizes; the 0.8B's heads
    for (nk, nv, dk, dv) in [(2, 4, 32, 32), (2, 6, 16, 24), (1, 1, 5, 7), (16, 16, 128, 128)] {
        for (x, w) in [
            (DType::F32, DType::F32),
            (DType::F32, DType::BF16),
            (DType::BF16, DType::BF16),
        ] {
            for (i, (seqs, spare)) in scenarios().into_iter().enumerate() {
                // the 0.8B's heads: the decode batches, in f32
                if dk == 128 && (x != DType::F32 || w != DType::F32 || i == 3 || i == 4) {
                    continue;
                }
                v.push(gdn_batch_case(x, w, nk, nv, dk, dv, &seqs, spare));
                // with the conv before and the gated norm after: f32 (the engine's) and bf16
                // throughout
                if w == x {
                    v.push(with_conv_norm(gdn_batch_case(x, w, nk, nv, dk, dv, &seqs, spare)));
                }
            }
        }
    }
    v
}

/// A gdn_batch case as gdn_conv_norm's: its qkv as the conv's input x, a conv weight [C, 4] (a_log's
/// dtype) and a conv pool over the same slots (NaN where no sequence continues) added, then z
/// [T, nv, dv] (qkv's dtype) and the norm's weight `[dv]` (a_log's dtype, near 1 as trained), o
/// normed into y.
fn with_conv_norm(c: Case) -> Case {
    const K: usize = 4;
    let o = &c.outputs[0];
    let (x, w, dv) = (c.inputs[0].desc.dtype, c.inputs[3].desc.dtype, o.shape[2]);
    let ch = c.inputs[0].desc.shape[1];
    let s = seed(&format!("gdnbn{}", c.id));
    let mut r = Rng::new(s ^ 9);
    let wv: Vec<f32> = (0..dv).map(|_| (1.0 + 0.1 * r.normal()) as f32).collect();
    // the layout again from the descriptor: (count, fresh) and the slot per sequence
    let Init::U32s(words) = c.inputs[5].init.clone() else {
        unreachable!("gdn_batch_case's seqs are given words")
    };
    let l = StateLayout {
        seqs: words
            .chunks(STATE_SEQ_FIELDS)
            .map(|q| (q[1] as usize, q[3] != 0))
            .collect(),
        slots: words.chunks(STATE_SEQ_FIELDS).map(|q| q[2] as usize).collect(),
        n: c.outputs[1].shape[0],
    };
    let mut inputs = c.inputs.clone();
    inputs.insert(1, input(w, &[ch, K], normal(s + 1, 0.5)));
    inputs.push(input(x, &o.shape, normal(s, 2.0)));
    inputs.push(input(w, &[dv], Init::Values(wv)));
    let mut outputs = c.outputs.clone();
    outputs.push(TensorDesc::new(DType::F32, &[l.n, K - 1, ch]));
    let mut n = Case::new("gdn_conv_norm", "", Op::GdnConvNorm { eps: 1e-6 }, inputs, outputs);
    n.id = c.id.replacen("gdn_batch[", "gdn_conv_norm[", 1);
    n.out_init = c.out_init.clone();
    n.out_init.push(Some(Init::Values(l.pool((K - 1) * ch, s + 2, 1.0))));
    n
}

/// causal_conv1d_batch over `seqs`: x, w in their dtypes, the conv pool f32.
pub fn conv_case(x: DType, w: DType, c: usize, k: usize, seqs: &[(usize, bool)], spare: usize) -> Case {
    let s = seed(&format!("convb{x}{w}{c}{k}{seqs:?}{spare}"));
    let l = StateLayout::new(seqs, spare, s);
    let wtag = if w != x { format!("-w{w}") } else { String::new() };
    let per = (k - 1) * c;
    Case::new(
        "causal_conv1d_batch",
        &format!("{x}{wtag},K{k},{}", l.tag()),
        Op::CausalConv1dBatch,
        vec![
            input(x, &[l.t(), c], normal(s + 1, 1.0)),
            input(w, &[c, k], normal(s + 2, 0.5)),
            input(DType::U32, &[seqs.len(), STATE_SEQ_FIELDS], Init::U32s(l.words())),
        ],
        vec![
            TensorDesc::new(x, &[l.t(), c]),
            TensorDesc::new(DType::F32, &[l.n, k - 1, c]),
        ],
    )
    .with_out_init(1, Init::Values(l.pool(per, s + 3, 1.0)))
}

/// gdn_batch over `seqs`: gates as a trained model has them (as the gdn cases), the recurrent
/// pool f32.
#[allow(clippy::too_many_arguments)]
pub fn gdn_batch_case(
    x: DType,
    w: DType,
    nk: usize,
    nv: usize,
    dk: usize,
    dv: usize,
    seqs: &[(usize, bool)],
    spare: usize,
) -> Case {
    let s = seed(&format!("gdnb{x}{w}{nk}{nv}{dk}{dv}{seqs:?}{spare}"));
    let l = StateLayout::new(seqs, spare, s);
    let mut r = Rng::new(s ^ 5);
    let a_log: Vec<f32> = (0..nv).map(|_| (1.0 + 15.0 * r.uniform()).ln() as f32).collect();
    let dt_bias: Vec<f32> = (0..nv)
        .map(|_| (0.001f64 + 0.099 * r.uniform()).exp_m1().ln() as f32)
        .collect();
    let (t, c) = (l.t(), 2 * nk * dk + nv * dv);
    let wtag = if w != x { format!("-w{w}") } else { String::new() };
    Case::new(
        "gdn_batch",
        &format!("{x}{wtag},nk{nk}nv{nv}dk{dk}dv{dv},{}", l.tag()),
        Op::GdnBatch,
        vec![
            input(x, &[t, c], normal(s + 1, 1.0)),
            input(x, &[t, nv], normal(s + 2, 1.5)),
            input(x, &[t, nv], normal(s + 3, 1.5)),
            input(w, &[nv], Init::Values(a_log)),
            input(w, &[nv], Init::Values(dt_bias)),
            input(DType::U32, &[seqs.len(), STATE_SEQ_FIELDS], Init::U32s(l.words())),
        ],
        vec![
            TensorDesc::new(x, &[t, nv, dv]),
            TensorDesc::new(DType::F32, &[l.n, nv, dk, dv]),
        ],
    )
    .with_out_init(1, Init::Values(l.pool(nv * dk * dv, s + 4, 0.2)))
}
