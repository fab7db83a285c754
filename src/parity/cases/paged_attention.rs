//! The paged KV ops: kv_write, paged_attention, paged_gated_attention. Batches are built by
//! `PagedLayout`: sequences given as (query count, kv length), their blocks scattered over the
//! pool in a seeded order (never contiguous, never in position order), optionally the first block
//! of sequence 1 shared with sequence 0 (as the prefix cache shares a full block). Every pool row
//! no sequence owns below its kv length is NaN, and so is every block-table entry past a
//! sequence's last block (an id past the pool): a kernel that reads past a sequence's keys or
//! table goes red.
use super::{normal, seed, DType};
use crate::op::{paged_slot, rope_tables, Op, TensorDesc, SEQ_FIELDS};
use crate::parity::case::{input, Case, Init};
use crate::util::Rng;

/// The KV dtypes of the pools.
const KV: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// A batch of sequences over a pool: where each one's blocks are, and its description.
#[derive(Clone, Debug)]
pub struct PagedLayout {
    pub bs: usize,
    pub nb: usize,
    /// (q_count, kv_len) per sequence
    pub seqs: Vec<(usize, usize)>,
    /// [S, mb] block ids; entries past a sequence's blocks hold `nb + 1000 + s` (not a block)
    pub tables: Vec<u32>,
    pub mb: usize,
}

impl PagedLayout {
    /// Blocks handed out in a seeded shuffle of the pool; with `share`, sequence 1's first block is
    /// sequence 0's (both must have a full first block). `spare` unused blocks stay in the pool.
    pub fn new(bs: usize, seqs: &[(usize, usize)], share: bool, spare: usize, seed: u64) -> PagedLayout {
        let need: Vec<usize> = seqs.iter().map(|&(_, kv)| kv.div_ceil(bs)).collect();
        let mb = need.iter().copied().max().unwrap_or(1).max(1) + 1;
        let nb = need.iter().sum::<usize>() + spare;
        let mut order: Vec<u32> = (0..nb as u32).collect();
        let mut r = Rng::new(seed);
        for i in (1..order.len()).rev() {
            order.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
        }
        let mut next = order.into_iter();
        let mut tables = Vec::with_capacity(seqs.len() * mb);
        for (s, &n) in need.iter().enumerate() {
            let start = tables.len();
            for j in 0..n {
                let shared = share && s == 1 && j == 0;
                tables.push(if shared { tables[0] } else { next.next().unwrap() });
            }
            tables.extend((n..mb).map(|_| (nb + 1000 + s) as u32));
            debug_assert_eq!(tables.len(), start + mb);
        }
        if share {
            assert!(
                seqs.len() > 1 && seqs[0].1 >= bs && seqs[1].1 >= bs,
                "a shared block is full"
            );
        }
        PagedLayout {
            bs,
            nb,
            seqs: seqs.to_vec(),
            tables,
            mb,
        }
    }

    pub fn t(&self) -> usize {
        self.seqs.iter().map(|s| s.0).sum()
    }

    /// The seqs operand: [first query row, query count, kv length] per sequence.
    pub fn seq_words(&self) -> Vec<u32> {
        let mut v = Vec::new();
        let mut row = 0;
        for &(q, kv) in &self.seqs {
            v.extend([row as u32, q as u32, kv as u32]);
            row += q;
        }
        v
    }

    /// Pool row of position `pos` of sequence `s`.
    pub fn slot(&self, s: usize, pos: usize) -> usize {
        paged_slot(&self.tables[s * self.mb..(s + 1) * self.mb], self.bs, pos) as usize
    }

    /// Pool contents ([NB, BS, Hkv, Dh] as f32): random rows at every position below `upto(s)` of
    /// each sequence, NaN elsewhere. A shared row gets the values of its first owner.
    pub fn pool(&self, row: usize, seed: u64, upto: impl Fn(usize) -> usize) -> Vec<f32> {
        let mut v = vec![f32::NAN; self.nb * self.bs * row];
        let mut r = Rng::new(seed);
        for s in 0..self.seqs.len() {
            for pos in 0..upto(s) {
                let at = self.slot(s, pos) * row;
                if v[at].is_nan() {
                    for x in &mut v[at..at + row] {
                        *x = r.normal() as f32;
                    }
                }
            }
        }
        v
    }

    /// Tag text: the sequences as q/kv pairs (`1/17+7/40`), the block size, sharing.
    fn tag(&self, share: bool) -> String {
        let s: Vec<String> = if self.seqs.len() > 8 {
            vec![format!("{}seqs", self.seqs.len())]
        } else {
            self.seqs.iter().map(|(q, kv)| format!("{q}/{kv}")).collect()
        };
        format!("{},bs{}{}", s.join("+"), self.bs, if share { ",shared" } else { "" })
    }
}

/// One batch scenario: heads (Hq, Hkv, Dh), block size, sequences (q_count, kv_len), sharing.
type Scenario = (usize, usize, usize, usize, Vec<(usize, usize)>, bool);

/// Decode batches (ragged, length 1, at a block boundary and one past it, many sequences),
/// prefill, a chunk after a cached prefix, a shared prefix block, block sizes other than 16, rows
/// over several key chunks, a group of 8 query heads a kv head, head_dim 32; rows of one, two,
/// three and more of paged_attention's key partitions side by side (at 64 | 65 and 128 | 129).
fn scenarios() -> Vec<Scenario> {
    let mut many = Rng::new(seed("paged-many"));
    let many: Vec<(usize, usize)> = (0..64).map(|_| (1, 1 + (many.next_u64() % 90) as usize)).collect();
    vec![
        (4, 4, 64, 16, vec![(1, 1)], false),
        (8, 2, 128, 16, vec![(1, 16)], false),
        (8, 2, 128, 16, vec![(1, 17)], false),
        (8, 2, 128, 16, vec![(1, 1), (1, 15), (1, 16), (1, 17), (1, 40)], false),
        (6, 1, 256, 16, vec![(1, 33), (1, 32)], false),
        (4, 2, 64, 16, many, false),
        (6, 1, 256, 16, vec![(13, 13)], false),
        (8, 2, 128, 16, vec![(7, 40)], false),
        (
            16,
            4,
            128,
            16,
            vec![(1, 33), (7, 23), (16, 16), (1, 1), (17, 49)],
            false,
        ),
        (4, 2, 64, 16, vec![(1, 20), (3, 35)], true),
        (8, 8, 64, 8, vec![(5, 9), (1, 8), (2, 2)], false),
        (4, 2, 128, 32, vec![(1, 32), (9, 33)], false),
        // several of paged_attention's 128-key chunks (Qwen3-0.6B's heads), and its largest group
        (16, 8, 128, 16, vec![(1, 300), (1, 129), (1, 128), (4, 260)], false),
        (8, 1, 128, 16, vec![(1, 200), (3, 150)], false),
        // head_dim 32 (llama-tiny): two vec4s a lane
        (4, 2, 32, 16, vec![(1, 20), (3, 35)], false),
        // paged_attention's 64-key partitions: one (1, 64), two (65, 128), three (129) and five
        // (300) partitions in one decode step, so most rows' later grid partitions fall on table
        // entries that are not blocks (and are never read)
        (
            8,
            2,
            128,
            16,
            vec![(1, 64), (1, 65), (1, 1), (1, 128), (1, 129), (1, 300), (1, 63)],
            false,
        ),
        // a prefill whose rows go from one partition to two, a chunk crossing 128 | 129 after a
        // cached prefix; a shared block; kv head per query head (G = 1)
        (4, 4, 64, 16, vec![(70, 70), (5, 131), (1, 64)], false),
        (4, 2, 64, 16, vec![(1, 65), (9, 200), (2, 66)], true),
        // blocks of 24 keys: partitions start and end inside blocks
        (8, 2, 64, 24, vec![(1, 65), (4, 150), (1, 47)], false),
        // a lone sequence's chunk after a cached prefix (the parity runner's invariance is off:
        // wgpu's prefill tile), blocks of 8 and 24 keys: a tile's key block spans table entries
        (4, 2, 64, 8, vec![(33, 70)], false),
        (8, 2, 128, 24, vec![(40, 150)], false),
        // past 512 keys, a lone chunk's keys in partitions of 512 (attention_parts.rs: few query
        // blocks x heads) counted from the table's length: from the first row; after a cached
        // prefix of 570 keys (blocks of 24: partitions end inside blocks); head_dim 128; a short
        // chunk after a long cache (the next turn of a chat); a table whose one spare entry
        // (PagedLayout) crosses into a third partition that holds none of the keys
        (4, 2, 64, 16, vec![(600, 600)], false),
        (4, 2, 64, 24, vec![(530, 1100)], false),
        (8, 2, 128, 16, vec![(520, 520)], false),
        (16, 8, 128, 16, vec![(64, 2100)], false),
        (8, 2, 128, 16, vec![(40, 1020)], false),
        // a lone prefill whose query blocks x head pairs (256) take the tile of two heads a
        // workgroup (attention.rs PAIR_TILE, where the device runs the split score)
        (64, 32, 64, 16, vec![(450, 455)], false),
        // a lone decode step (invariance off): a table of 128 keys and of 224 (one partition of
        // them, Tuning::lone_keys), and of 320 (64-key partitions and the combine)
        (8, 2, 128, 16, vec![(1, 100)], false),
        (16, 8, 128, 16, vec![(1, 200)], false),
        (8, 2, 128, 16, vec![(1, 300)], false),
    ]
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    v.extend(kv_write_cases());
    for (hq, hkv, dh, bs, seqs, share) in scenarios() {
        for kv in KV {
            v.push(paged_attention_case(hq, hkv, dh, bs, &seqs, share, kv, 1.0));
        }
    }
    // a lone sequence's prefill with sharp scores (queries of deviation 8: a row's max grows
    // by e^8 and more from one key block to a later one, so the online softmax's rescale
    // matters), from the first row and after a cached prefix
    for (hq, hkv, dh, seqs) in [(4, 2, 128, vec![(48, 48)]), (4, 2, 64, vec![(40, 150)])] {
        for kv in KV {
            v.push(paged_attention_case(hq, hkv, dh, 16, &seqs, false, kv, 8.0));
        }
    }
    for (hq, hkv, dh, bs, seqs, share, rot) in gated_scenarios() {
        for kv in KV {
            v.push(paged_gated_case(hq, hkv, dh, bs, &seqs, share, rot, kv));
        }
    }
    v
}

/// paged_attention over `seqs`: every key row (cached and this step's) already in the pools;
/// queries of deviation `q_std`.
pub fn paged_attention_case(
    hq: usize,
    hkv: usize,
    dh: usize,
    bs: usize,
    seqs: &[(usize, usize)],
    share: bool,
    kv: DType,
    q_std: f32,
) -> Case {
    let sharp = if q_std == 1.0 {
        String::new()
    } else {
        format!(",q{q_std}")
    };
    let tag0 = format!("Hkv{hkv},dh{dh}{sharp}");
    let s = seed(&format!("paged{tag0}{seqs:?}{bs}{share}"));
    let l = PagedLayout::new(bs, seqs, share, 3, s);
    let tag = format!("kv{kv},{tag0},{}", l.tag(share));
    let row = hkv * dh;
    let kv_len = |s: usize| l.seqs[s].1;
    let pool_shape = [l.nb, bs, hkv, dh];
    Case::new(
        "paged_attention",
        &tag,
        Op::PagedAttention {
            scale: 1.0 / (dh as f32).sqrt(),
            block_size: bs,
        },
        vec![
            input(DType::F32, &[l.t(), hq, dh], normal(s + 1, q_std)),
            input(kv, &pool_shape, Init::Values(l.pool(row, s + 2, kv_len))),
            input(kv, &pool_shape, Init::Values(l.pool(row, s + 3, kv_len))),
            input(DType::U32, &[seqs.len(), l.mb], Init::U32s(l.tables.clone())),
            input(DType::U32, &[seqs.len(), SEQ_FIELDS], Init::U32s(l.seq_words())),
        ],
        vec![TensorDesc::new(DType::F32, &[l.t(), hq, dh])],
    )
}

/// Gated scenarios: heads, block size, sequences, sharing, rotary dims (the tiny model's 4 / 2 x 64
/// with rotary 16, the 0.8B's 8 / 2 x 256 with rotary 64).
type GatedScenario = (usize, usize, usize, usize, Vec<(usize, usize)>, bool, usize);

fn gated_scenarios() -> Vec<GatedScenario> {
    vec![
        (4, 2, 64, 16, vec![(1, 1), (1, 16), (1, 17), (1, 30)], false, 16),
        (4, 2, 64, 16, vec![(7, 7), (5, 21)], false, 16),
        (4, 2, 64, 16, vec![(1, 20), (4, 36)], true, 16),
        (8, 2, 256, 16, vec![(1, 300), (9, 40), (1, 1)], false, 64),
        // one sequence of several rows (wgpu's lone prefill tile under invariance off): a first
        // chunk, and a chunk after a cached prefix of more than one key partition
        (4, 2, 64, 16, vec![(70, 70)], false, 16),
        (8, 2, 256, 16, vec![(9, 140)], false, 64),
        // past 512 keys after a cached prefix: the prefill tile's key partitions
        // (attention_parts.rs)
        (4, 2, 64, 16, vec![(600, 1300)], false, 16),
        // a lone decode step (wgpu's paged_attention_lone.wgsl with the gated prologue under
        // invariance off): one key partition (16 keys at head_dim 256), two, several combined,
        // the tiny model's shape
        (8, 2, 256, 16, vec![(1, 12)], false, 64),
        (8, 2, 256, 16, vec![(1, 30)], false, 64),
        (8, 2, 256, 16, vec![(1, 150)], false, 64),
        (8, 2, 256, 16, vec![(1, 300)], false, 64),
        (4, 2, 64, 16, vec![(1, 40)], false, 16),
        // a group of 16 query heads, more than paged_attention takes (MAX_GROUP): wgpu's per-row
        // kernel, a lone decode step and a batch
        (16, 1, 64, 16, vec![(1, 90)], false, 16),
        (16, 1, 64, 16, vec![(1, 20), (3, 40)], false, 16),
    ]
}

/// paged_gated_attention: the pools hold each sequence's cached rows (below kv_len - q_count);
/// the rows of this step's tokens start NaN, so a row the op fails to write goes red.
#[allow(clippy::too_many_arguments)]
pub fn paged_gated_case(
    hq: usize,
    hkv: usize,
    dh: usize,
    bs: usize,
    seqs: &[(usize, usize)],
    share: bool,
    rot: usize,
    kv: DType,
) -> Case {
    let tag0 = format!("Hkv{hkv},dh{dh},rot{rot}");
    let s = seed(&format!("pgattn{tag0}{seqs:?}{bs}{share}"));
    let l = PagedLayout::new(bs, seqs, share, 2, s);
    let tag = format!("kv{kv},{tag0},{}", l.tag(share));
    let (t, row) = (l.t(), hkv * dh);
    let cached = |s: usize| l.seqs[s].1 - l.seqs[s].0;
    let mut r = Rng::new(s ^ 11);
    let mut norm_w = || -> Vec<f32> { (0..dh).map(|_| (0.1 * r.normal()) as f32).collect() };
    let (qn, kn) = (norm_w(), norm_w());
    let p = l.mb * bs;
    let (cos, sin) = rope_tables(1e7, rot, p);
    let pool_shape = [l.nb, bs, hkv, dh];
    Case::new(
        "paged_gated_attention",
        &tag,
        Op::PagedGatedAttention {
            scale: 1.0 / (dh as f32).sqrt(),
            block_size: bs,
            eps: 1e-6,
            rotary_dim: rot,
        },
        vec![
            input(DType::F32, &[t, hq, 2 * dh], normal(s + 1, 1.0)),
            input(DType::F32, &[t, hkv, dh], normal(s + 2, 1.0)),
            input(DType::F32, &[t, hkv, dh], normal(s + 3, 1.0)),
            input(DType::F32, &[dh], Init::Values(qn)),
            input(DType::F32, &[dh], Init::Values(kn)),
            input(DType::F32, &[p, rot / 2], Init::Values(cos)),
            input(DType::F32, &[p, rot / 2], Init::Values(sin)),
            input(DType::U32, &[seqs.len(), l.mb], Init::U32s(l.tables.clone())),
            input(DType::U32, &[seqs.len(), SEQ_FIELDS], Init::U32s(l.seq_words())),
        ],
        vec![
            TensorDesc::new(DType::F32, &[t, hq, dh]),
            TensorDesc::new(kv, &pool_shape),
            TensorDesc::new(kv, &pool_shape),
        ],
    )
    .with_out_init(1, Init::Values(l.pool(row, s + 4, cached)))
    .with_out_init(2, Init::Values(l.pool(row, s + 5, cached)))
}

/// kv_write: T tokens into scattered slots of a pool whose other rows hold values or NaN (which
/// must come back untouched, bit for bit).
fn kv_write_cases() -> Vec<Case> {
    let mut v = Vec::new();
    for kv in KV {
        for (t, hkv, dh, nb) in [(1, 2, 64, 3), (7, 4, 128, 4), (33, 1, 256, 5), (16, 8, 64, 2)] {
            let tag = format!("kv{kv},Hkv{hkv},dh{dh},nb{nb}");
            let s = seed(&format!("kvw{tag}{t}"));
            let bs = 16;
            let mut r = Rng::new(s);
            let mut rows: Vec<u32> = (0..(nb * bs) as u32).collect();
            for i in (1..rows.len()).rev() {
                rows.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
            }
            let slots = rows[..t].to_vec();
            let old = |seed: u64| stale_pool(nb, bs * hkv * dh, seed);
            let shape = [nb, bs, hkv, dh];
            v.push(
                Case::new(
                    "kv_write",
                    &tag,
                    Op::KvWrite,
                    vec![
                        input(DType::F32, &[t, hkv, dh], normal(s + 1, 1.0)),
                        input(DType::F32, &[t, hkv, dh], normal(s + 2, 1.0)),
                        input(DType::U32, &[t], Init::U32s(slots)),
                    ],
                    vec![TensorDesc::new(kv, &shape), TensorDesc::new(kv, &shape)],
                )
                .with_out_init(0, old(s + 3))
                .with_out_init(1, old(s + 4)),
            );
        }
    }
    v
}

/// A KV pool's contents before a write: normal values in the even blocks, NaN in the odd ones (a
/// kernel that reads or keeps a row it should not shows it), `block` elements a block.
pub(crate) fn stale_pool(nb: usize, block: usize, seed: u64) -> Init {
    let mut r = Rng::new(seed);
    let v: Vec<f32> = (0..nb * block)
        .map(|i| {
            if (i / block) % 2 == 1 {
                f32::NAN
            } else {
                r.normal() as f32
            }
        })
        .collect();
    Init::Values(v)
}
