//! Batch invariance of the hybrid-state ops on one device (issue 17): one sequence's tokens run
//! through causal_conv1d_batch and gdn_batch in different batch compositions and chunkings must
//! give the same bits for every output row and for its final conv and recurrent states.
//! Compositions, each from the same initial pools (the watched sequence's slot NaN: it starts
//! fresh, so a read of it would poison everything):
//!   - decode steps, one token at a time, alone;
//!   - the whole prompt as one chunk, alone (crossing positions 64 and 128);
//!   - chunks of 7, each next to the other 63 sequences' decode steps;
//!   - seeded random chunk sizes (1..=80, so some chunks cross a multiple of 64 and some do not),
//!     each placed at a varying place among other sequences' prefill chunks and decode steps;
//!   - chunks of 64 aligned to absolute positions (the chunked prefill's natural cut).
//! The first composition is also compared with the CPU reference (within the gdn tolerance), so
//! ops that returned the same wrong bits everywhere would not pass.
use super::cases::gdn_batch::StateLayout;
use super::compare::{compare, tolerance};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::dtype::DType;
use crate::op::{Op, STATE_SEQ_FIELDS};
use crate::tensor::Tensor;
use crate::util::{seed, Rng};

/// The tiny Qwen3.5's linear-attention heads and conv.
const NK: usize = 2;
const NV: usize = 4;
const DK: usize = 32;
const DV: usize = 32;
const K: usize = 4;
const CQ: usize = 2 * NK * DK + NV * DV;
/// The watched sequence's length: past two chunk boundaries of 64.
const LEN: usize = 150;
/// Other sequences in the batch besides the watched one.
const OTHERS: usize = 63;

/// One step's piece of a sequence: (sequence, first position, token count).
type Piece = (usize, usize, usize);

struct World {
    layout: StateLayout,
    lens: Vec<usize>,
    a_log: Vec<f32>,
    dt_bias: Vec<f32>,
    conv_w: Vec<f32>,
}

impl World {
    fn new() -> World {
        let mut r = Rng::new(seed("state-invariance-lens"));
        let mut lens = vec![LEN];
        lens.extend((0..OTHERS).map(|_| 2 + (r.next_u64() % 90) as usize));
        let seqs: Vec<(usize, bool)> = (0..=OTHERS).map(|s| (1, s == 0)).collect();
        let a_log = (0..NV).map(|_| (1.0 + 15.0 * r.uniform()).ln() as f32).collect();
        let dt_bias = (0..NV)
            .map(|_| (0.001f64 + 0.099 * r.uniform()).exp_m1().ln() as f32)
            .collect();
        let conv_w = (0..CQ * K).map(|_| (0.5 * r.normal()) as f32).collect();
        World {
            layout: StateLayout::new(&seqs, 4, seed("state-invariance-slots")),
            lens,
            a_log,
            dt_bias,
            conv_w,
        }
    }

    /// Row `pos` of sequence `s` of a per-token input (`what` names it), `n` values.
    fn row(&self, what: &str, s: usize, pos: usize, n: usize, std: f64) -> Vec<f32> {
        let mut r = Rng::new(seed(&format!("sinv-{what}-{s}-{pos}")));
        (0..n).map(|_| (r.normal() * std) as f32).collect()
    }
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

fn upload_f32(dev: &dyn Backend, shape: &[usize], v: &[f32]) -> Result<Tensor, String> {
    let t = dev.alloc(DType::F32, shape).map_err(e)?;
    dev.upload(&t, &DType::F32.encode_f32(v)).map_err(e)?;
    Ok(t)
}

fn upload_u32(dev: &dyn Backend, shape: &[usize], v: &[u32]) -> Result<Tensor, String> {
    let t = dev.alloc(DType::U32, shape).map_err(e)?;
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.upload(&t, &b).map_err(e)?;
    Ok(t)
}

/// What a composition leaves for the watched sequence: per position its conv output and gdn
/// output rows; after the last step its conv and recurrent states.
struct Watched {
    conv: Vec<Vec<f32>>,
    gdn: Vec<Vec<f32>>,
    conv_state: Vec<f32>,
    rec_state: Vec<f32>,
}

fn run(w: &World, dev: &dyn Backend, steps: &[Vec<Piece>]) -> Result<Watched, String> {
    let l = &w.layout;
    let (cper, rper) = ((K - 1) * CQ, NV * DK * DV);
    let cpool = upload_f32(dev, &[l.n, K - 1, CQ], &l.pool(cper, seed("sinv-cpool"), 1.0))?;
    let rpool = upload_f32(dev, &[l.n, NV, DK, DV], &l.pool(rper, seed("sinv-rpool"), 0.2))?;
    let cw = upload_f32(dev, &[CQ, K], &w.conv_w)?;
    let a_log = upload_f32(dev, &[NV], &w.a_log)?;
    let dt_bias = upload_f32(dev, &[NV], &w.dt_bias)?;
    let mut out = Watched {
        conv: vec![Vec::new(); LEN],
        gdn: vec![Vec::new(); LEN],
        conv_state: Vec::new(),
        rec_state: Vec::new(),
    };
    for step in steps {
        let t: usize = step.iter().map(|p| p.2).sum();
        let (mut x, mut qkv, mut b, mut a, mut words) = (vec![], vec![], vec![], vec![], vec![]);
        let mut row = 0u32;
        for &(s, first, n) in step {
            for pos in first..first + n {
                x.extend(w.row("x", s, pos, CQ, 1.0));
                qkv.extend(w.row("qkv", s, pos, CQ, 1.0));
                b.extend(w.row("b", s, pos, NV, 1.5));
                a.extend(w.row("a", s, pos, NV, 1.5));
            }
            words.extend([row, n as u32, l.slots[s] as u32, (first == 0) as u32]);
            row += n as u32;
        }
        let seqs = upload_u32(dev, &[step.len(), STATE_SEQ_FIELDS], &words)?;
        let xt = upload_f32(dev, &[t, CQ], &x)?;
        let y = dev.alloc(DType::F32, &[t, CQ]).map_err(e)?;
        dev.run(&Op::CausalConv1dBatch, &[&xt, &cw, &seqs], &[&y, &cpool])
            .map_err(e)?;
        let (qt, bt, at) = (
            upload_f32(dev, &[t, CQ], &qkv)?,
            upload_f32(dev, &[t, NV], &b)?,
            upload_f32(dev, &[t, NV], &a)?,
        );
        let o = dev.alloc(DType::F32, &[t, NV, DV]).map_err(e)?;
        dev.run(&Op::GdnBatch, &[&qt, &bt, &at, &a_log, &dt_bias, &seqs], &[&o, &rpool])
            .map_err(e)?;
        dev.flush().map_err(e)?;
        let (yv, ov) = (
            DType::F32.decode_f32(&dev.download(&y).map_err(e)?),
            DType::F32.decode_f32(&dev.download(&o).map_err(e)?),
        );
        let mut r = 0;
        for &(s, first, n) in step {
            for pos in first..first + n {
                if s == 0 {
                    out.conv[pos] = yv[r * CQ..(r + 1) * CQ].to_vec();
                    out.gdn[pos] = ov[r * NV * DV..(r + 1) * NV * DV].to_vec();
                }
                r += 1;
            }
        }
    }
    let slot = l.slots[0];
    let cs = DType::F32.decode_f32(&dev.download(&cpool).map_err(e)?);
    let rs = DType::F32.decode_f32(&dev.download(&rpool).map_err(e)?);
    out.conv_state = cs[slot * cper..(slot + 1) * cper].to_vec();
    out.rec_state = rs[slot * rper..(slot + 1) * rper].to_vec();
    Ok(out)
}

/// The compositions: name and steps; each covers positions 0..LEN of sequence 0 in order.
fn compositions(lens: &[usize]) -> Vec<(&'static str, Vec<Vec<Piece>>)> {
    let decodes: Vec<Piece> = (1..=OTHERS).map(|s| (s, lens[s] - 1, 1)).collect();
    let decode: Vec<Vec<Piece>> = (0..LEN).map(|p| vec![(0, p, 1)]).collect();
    let whole = vec![vec![(0, 0, LEN)]];
    let sevens: Vec<Vec<Piece>> = (0..LEN)
        .step_by(7)
        .enumerate()
        .map(|(i, a)| {
            let mut step = decodes.clone();
            step.insert((i * 17) % (OTHERS + 1), (0, a, 7.min(LEN - a)));
            step
        })
        .collect();
    let mut r = Rng::new(seed("sinv-random-chunks"));
    let mut random = Vec::new();
    let mut a = 0;
    while a < LEN {
        let n = ((1 + r.next_u64() % 80) as usize).min(LEN - a);
        let mut step: Vec<Piece> = Vec::new();
        for s in 1..=(1 + r.next_u64() % 6) as usize {
            let m = 1 + (r.next_u64() % lens[s] as u64) as usize;
            step.push((s, lens[s] - m, m));
        }
        step.insert((r.next_u64() % (step.len() as u64 + 1)) as usize, (0, a, n));
        random.push(step);
        a += n;
    }
    let aligned: Vec<Vec<Piece>> = (0..LEN)
        .step_by(64)
        .map(|a| vec![(0, a, 64.min(LEN - a)), (5, lens[5] - 1, 1)])
        .collect();
    vec![
        ("decode steps", decode),
        ("whole prompt", whole),
        ("chunks of 7 among 63 decodes", sevens),
        ("random chunks among prefills", random),
        ("aligned chunks of 64", aligned),
    ]
}

/// First element where two row lists differ in bits.
fn first_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> Option<(usize, usize, f32, f32)> {
    for (pos, (x, y)) in a.iter().zip(b).enumerate() {
        if let Some(i) = (0..x.len()).find(|&i| x[i].to_bits() != y[i].to_bits()) {
            return Some((pos, i, x[i], y[i]));
        }
    }
    None
}

/// Runs every composition on `dev`; Ok with a summary when each gives the decode steps' bits for
/// every output row and both final states.
pub fn check(dev: &dyn Backend) -> Result<String, String> {
    let w = World::new();
    let comps = compositions(&w.lens);
    let mut base: Option<(&str, Watched)> = None;
    for (name, steps) in &comps {
        let got = run(&w, dev, steps).map_err(|m| format!("{name}: {m}"))?;
        let Some((bname, b)) = &base else {
            base = Some((name, got));
            continue;
        };
        for (what, x, y) in [("conv", &got.conv, &b.conv), ("gdn", &got.gdn, &b.gdn)] {
            if let Some((pos, i, u, v)) = first_diff(x, y) {
                return Err(format!(
                    "{what} output at position {pos}: \"{name}\" differs from \"{bname}\" at element {i}: {u} vs {v}"
                ));
            }
        }
        for (what, x, y) in [
            ("conv state", &got.conv_state, &b.conv_state),
            ("recurrent state", &got.rec_state, &b.rec_state),
        ] {
            if let Some((_, i, u, v)) = first_diff(std::slice::from_ref(x), std::slice::from_ref(y)) {
                return Err(format!(
                    "final {what}: \"{name}\" differs from \"{bname}\" at element {i}: {u} vs {v}"
                ));
            }
        }
    }
    // not vacuous: the first composition against the CPU reference
    let (name, got) = base.ok_or("no composition")?;
    let want = run(&w, &CpuBackend::new(), &comps[0].1)?;
    let flat = |v: &[Vec<f32>]| DType::F32.encode_f32(&v.concat());
    let mut worst = 0f64;
    for (what, fam, x, y) in [
        ("conv", "causal_conv1d_batch", flat(&got.conv), flat(&want.conv)),
        ("gdn", "gdn_batch", flat(&got.gdn), flat(&want.gdn)),
        (
            "recurrent state",
            "gdn_batch",
            DType::F32.encode_f32(&got.rec_state),
            DType::F32.encode_f32(&want.rec_state),
        ),
    ] {
        let c = compare(DType::F32, &x, &y, tolerance(fam, DType::F32))
            .map_err(|m| format!("\"{name}\" {what} vs the cpu reference: {m}"))?;
        worst = worst.max(c.nmse);
    }
    if got.conv_state != want.conv_state {
        return Err(format!(
            "\"{name}\": the final conv state differs from the cpu reference's"
        ));
    }
    Ok(format!(
        "{} compositions bit-identical over {LEN} positions and the final states; vs cpu nmse {worst:.2e}",
        comps.len()
    ))
}
