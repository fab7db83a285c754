//! Batch invariance of the paged attention ops on one device (issue 17's central requirement): one
//! sequence's prompt computed in different batch compositions and chunkings must give the same
//! bits for every query row. Compositions, each over the same pools and block tables:
//!   - the whole prompt as one chunk, alone;
//!   - decode steps, one position at a time, alone;
//!   - chunks of 7, each next to the other 63 sequences' decode steps;
//!   - seeded random chunk sizes, each placed at a varying place among other sequences' prefill
//!     chunks and decode steps.
//! paged_attention reads pools that already hold every key (its causal mask is the contract);
//! paged_gated_attention writes the new keys itself, so each composition starts from fresh pools
//! holding only the other sequences' cached rows, and the written pool rows are compared too.
//! One composition is also compared with the CPU reference (within the attention tolerance), so
//! an op that returned the same wrong bits everywhere would not pass.
//! Each step's block tables are as wide as its longest sequence needs (as the engine uploads
//! them), so the width changes from step to step. paged_attention's watched prompt (and some of
//! the others) spans three of its 64-key partitions, so one, two and three partitions are each
//! computed in every composition, under grids of one to several partitions a row.
use super::cases::paged_attention::PagedLayout;
use super::compare::{compare, tolerance};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BatchInvariance};
use crate::dtype::DType;
use crate::op::{rope_tables, Op, SEQ_FIELDS};
use crate::tensor::Tensor;
use crate::util::{seed, Rng};

const HQ: usize = 8;
const HKV: usize = 2;
const DH: usize = 64;
const BS: usize = 16;
const ROT: usize = 16;
/// The watched sequence's prompt: paged_gated_attention's blocks 0, 1 full, block 2 partial;
/// paged_attention's three key partitions, the last partial (and blocks 0..8 full).
const fn watched_len(gated: bool) -> usize {
    if gated {
        40
    } else {
        140
    }
}
/// Other sequences in the batch besides the watched one.
const OTHERS: usize = 63;

/// One step's piece of a sequence: (sequence, first position, query count).
type Piece = (usize, usize, usize);

struct World {
    layout: PagedLayout,
    /// per sequence, the positions it has (its full length)
    lens: Vec<usize>,
    kv: DType,
    gated: bool,
}

impl World {
    fn new(kv: DType, gated: bool) -> World {
        let mut r = Rng::new(seed("paged-invariance-lens"));
        let mut lens = vec![watched_len(gated)];
        let spread = if gated { 45 } else { 130 };
        lens.extend((0..OTHERS).map(|_| 2 + (r.next_u64() % spread) as usize));
        let seqs: Vec<(usize, usize)> = lens.iter().map(|&l| (1, l)).collect();
        World {
            layout: PagedLayout::new(BS, &seqs, false, 5, seed("paged-invariance-layout")),
            lens,
            kv,
            gated,
        }
    }

    /// Row `pos` of sequence `s` of a per-token input (`what` names it), `n` values.
    fn row(&self, what: &str, s: usize, pos: usize, n: usize) -> Vec<f32> {
        let mut r = Rng::new(seed(&format!("pinv-{what}-{s}-{pos}")));
        (0..n).map(|_| r.normal() as f32).collect()
    }

    /// Pools for a run: every row of every sequence (plain), or for the gated op only the other
    /// sequences' rows below their first position in `pieces` (the watched one's are written by
    /// the runs of its composition).
    fn pools(&self, start: &[usize]) -> (Vec<f32>, Vec<f32>) {
        let row = HKV * DH;
        let upto = |s: usize| if self.gated { start[s] } else { self.lens[s] };
        (
            self.layout.pool(row, seed("pinv-kpool"), upto),
            self.layout.pool(row, seed("pinv-vpool"), upto),
        )
    }

    fn op(&self) -> Op {
        let scale = 1.0 / (DH as f32).sqrt();
        match self.gated {
            false => Op::PagedAttention { scale, block_size: BS },
            true => Op::PagedGatedAttention {
                scale,
                block_size: BS,
                eps: 1e-6,
                rotary_dim: ROT,
            },
        }
    }
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

pub(crate) fn upload_f32(dev: &dyn Backend, dt: DType, shape: &[usize], v: &[f32]) -> Result<Tensor, String> {
    let t = dev.alloc(dt, shape).map_err(e)?;
    dev.upload(&t, &dt.encode_f32(v)).map_err(e)?;
    Ok(t)
}

pub(crate) fn upload_u32(dev: &dyn Backend, shape: &[usize], v: &[u32]) -> Result<Tensor, String> {
    let t = dev.alloc(DType::U32, shape).map_err(e)?;
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.upload(&t, &b).map_err(e)?;
    Ok(t)
}

/// Runs a composition (a list of steps, each a list of pieces) on `dev` from fresh pools; returns
/// the watched sequence's output row per position, and (gated) its pool rows after the last step.
fn run(w: &World, dev: &dyn Backend, steps: &[Vec<Piece>]) -> Result<(Vec<Vec<f32>>, Vec<f32>), String> {
    let l = &w.layout;
    let mut start = w.lens.clone();
    for p in steps.iter().flatten() {
        start[p.0] = start[p.0].min(p.1);
    }
    let (kp0, vp0) = w.pools(&start);
    let pshape = [l.nb, BS, HKV, DH];
    let kp = upload_f32(dev, w.kv, &pshape, &kp0)?;
    let vp = upload_f32(dev, w.kv, &pshape, &vp0)?;
    let mut mine = vec![Vec::new(); w.lens[0]];
    let qw = if w.gated { 2 * DH } else { DH };
    let (cos, sin) = rope_tables(1e6, ROT, l.mb * BS);
    let mut nr = Rng::new(seed("pinv-norms"));
    let norms: Vec<f32> = (0..2 * DH).map(|_| (0.1 * nr.normal()) as f32).collect();
    for step in steps {
        let t: usize = step.iter().map(|p| p.2).sum();
        // the step's table width: the blocks its longest sequence uses (as the engine uploads)
        let mb = step.iter().map(|p| (p.1 + p.2).div_ceil(BS)).max().unwrap_or(1);
        let (mut q, mut k, mut v, mut tables, mut seqs) = (vec![], vec![], vec![], vec![], vec![]);
        for &(s, first, n) in step {
            for pos in first..first + n {
                q.extend(w.row("q", s, pos, HQ * qw));
                k.extend(w.row("k", s, pos, HKV * DH));
                v.extend(w.row("v", s, pos, HKV * DH));
            }
            tables.extend_from_slice(&l.tables[s * l.mb..s * l.mb + mb]);
            seqs.extend([step_row(step, s) as u32, n as u32, (first + n) as u32]);
        }
        let ns = step.len();
        let qt = upload_f32(dev, DType::F32, &[t, HQ, qw], &q)?;
        let bt = upload_u32(dev, &[ns, mb], &tables)?;
        let sq = upload_u32(dev, &[ns, SEQ_FIELDS], &seqs)?;
        let o = dev.alloc(DType::F32, &[t, HQ, DH]).map_err(e)?;
        if w.gated {
            let kt = upload_f32(dev, DType::F32, &[t, HKV, DH], &k)?;
            let vt = upload_f32(dev, DType::F32, &[t, HKV, DH], &v)?;
            let qn = upload_f32(dev, DType::F32, &[DH], &norms[..DH])?;
            let kn = upload_f32(dev, DType::F32, &[DH], &norms[DH..])?;
            let ct = upload_f32(dev, DType::F32, &[l.mb * BS, ROT / 2], &cos)?;
            let st = upload_f32(dev, DType::F32, &[l.mb * BS, ROT / 2], &sin)?;
            dev.run(&w.op(), &[&qt, &kt, &vt, &qn, &kn, &ct, &st, &bt, &sq], &[&o, &kp, &vp])
                .map_err(e)?;
        } else {
            dev.run(&w.op(), &[&qt, &kp, &vp, &bt, &sq], &[&o]).map_err(e)?;
        }
        dev.flush().map_err(e)?;
        let out = DType::F32.decode_f32(&dev.download(&o).map_err(e)?);
        let mut r = 0;
        for &(s, first, n) in step {
            for pos in first..first + n {
                if s == 0 {
                    mine[pos] = out[r * HQ * DH..(r + 1) * HQ * DH].to_vec();
                }
                r += 1;
            }
        }
    }
    let mut rows = Vec::new();
    if w.gated {
        let (kb, vb) = (dev.download(&kp).map_err(e)?, dev.download(&vp).map_err(e)?);
        let (kf, vf) = (w.kv.decode_f32(&kb), w.kv.decode_f32(&vb));
        let row = HKV * DH;
        for pos in 0..w.lens[0] {
            let at = l.slot(0, pos) * row;
            rows.extend_from_slice(&kf[at..at + row]);
            rows.extend_from_slice(&vf[at..at + row]);
        }
    }
    Ok((mine, rows))
}

/// First query row of sequence `s`'s piece in `step`.
fn step_row(step: &[Piece], s: usize) -> usize {
    step.iter().take_while(|p| p.0 != s).map(|p| p.2).sum()
}

/// The compositions: name and steps. Every one covers positions 0..lens[0] of sequence 0; `lens`
/// are every sequence's lengths.
fn compositions(lens: &[usize]) -> Vec<(&'static str, Vec<Vec<Piece>>)> {
    let len = lens[0];
    let decodes: Vec<Piece> = (1..=OTHERS).map(|s| (s, lens[s] - 1, 1)).collect();
    let whole = vec![vec![(0, 0, len)]];
    let decode: Vec<Vec<Piece>> = (0..len).map(|p| vec![(0, p, 1)]).collect();
    // the watched chunk at a different place among the decodes each step
    let sevens: Vec<Vec<Piece>> = (0..len)
        .step_by(7)
        .enumerate()
        .map(|(i, a)| {
            let mut step = decodes.clone();
            step.insert((i * 17) % (OTHERS + 1), (0, a, 7.min(len - a)));
            step
        })
        .collect();
    let mut r = Rng::new(seed("pinv-random-chunks"));
    let mut random = Vec::new();
    let mut a = 0;
    while a < len {
        let n = ((1 + r.next_u64() % 12) as usize).min(len - a);
        // a few other sequences' chunks (their last m positions) and decode steps around it
        let mut step: Vec<Piece> = Vec::new();
        for s in 1..=(1 + r.next_u64() % 6) as usize {
            let m = 1 + (r.next_u64() % lens[s] as u64) as usize;
            step.push((s, lens[s] - m, m));
        }
        step.insert((r.next_u64() % (step.len() as u64 + 1)) as usize, (0, a, n));
        random.push(step);
        a += n;
    }
    vec![
        ("decode steps", decode),
        ("whole prompt", whole),
        ("chunks of 7 among 63 decodes", sevens),
        ("random chunks among prefills", random),
    ]
}

/// Runs every composition on `dev` with pools of `kv` (gated or plain op) under the batch
/// invariance the serving engine sets (`BatchInvariance::FewRows`: with it off, a lone
/// sequence's prefill takes a faster kernel that promises no such thing); Ok with a summary when
/// every composition gives the same bits as the decode steps for every position.
pub fn check(dev: &dyn Backend, kv: DType, gated: bool) -> Result<String, String> {
    super::with_invariance(dev, BatchInvariance::FewRows, || check_invariant(dev, kv, gated))
}

fn check_invariant(dev: &dyn Backend, kv: DType, gated: bool) -> Result<String, String> {
    let w = World::new(kv, gated);
    let comps = compositions(&w.lens);
    let mut base: Option<(&str, Vec<Vec<f32>>, Vec<f32>)> = None;
    for (name, steps) in &comps {
        let (rows, pool) = run(&w, dev, steps).map_err(|m| format!("{name}: {m}"))?;
        match &base {
            None => base = Some((name, rows, pool)),
            Some((bname, brows, bpool)) => {
                for pos in 0..w.lens[0] {
                    if let Some(i) = (0..rows[pos].len()).find(|&i| rows[pos][i].to_bits() != brows[pos][i].to_bits()) {
                        return Err(format!(
                            "position {pos}: \"{name}\" differs from \"{bname}\" at element {i}: {} vs {}",
                            rows[pos][i], brows[pos][i]
                        ));
                    }
                }
                if let Some(i) = (0..pool.len()).find(|&i| pool[i].to_bits() != bpool[i].to_bits()) {
                    return Err(format!(
                        "pool rows written by \"{name}\" differ from \"{bname}\" at element {i}"
                    ));
                }
            }
        }
    }
    // not vacuous: the first composition against the CPU reference
    let (name, rows, _) = base.ok_or("no composition")?;
    let (want, _) = run(&w, &CpuBackend::new(), &comps[0].1)?;
    let flat = |v: &[Vec<f32>]| DType::F32.encode_f32(&v.concat());
    let fam = if gated {
        "paged_gated_attention"
    } else {
        "paged_attention"
    };
    let c = compare(DType::F32, &flat(&rows), &flat(&want), tolerance(fam, DType::F32))
        .map_err(|m| format!("\"{name}\" vs the cpu reference: {m}"))?;
    Ok(format!(
        "{} compositions bit-identical over {} positions; vs cpu nmse {:.2e}",
        comps.len(),
        w.lens[0],
        c.nmse
    ))
}
