//! paged_attention's guards on one device: contents the host checks (op::check_paged_batch) are
//! guarded in the kernels only so that nothing is read or written out of place, and a row they
//! fail comes out NaN. The CPU reference cannot run such a batch, so the check is against the
//! device itself: in one batch
//!   - a sequence whose table holds a block id past the pool in its second 64-key partition
//!     (paged_attention's partitions: the row is combined, and that partition's sums are NaN);
//!   - a sequence whose description does not hold together (kv length past its table);
//!   - two sound sequences (over one and over three partitions);
//! the first two sequences' rows must be all NaN, and the sound ones bit for bit what the device
//! gives them in a batch of their own (every other pool block NaN, so a stray read shows).
//! A lone sequence's prefill chunk under `BatchInvariance::Off` takes another kernel (wgpu's
//! prefill tile), checked the same way: it matches the invariant kernel's rows within the attention
//! tolerance, a block id past the pool in its table makes every row that sees that block NaN (and
//! may make the earlier rows of a query tile NaN, whose keys the tile stages together; no other
//! change), and a description that does not hold together makes every row NaN.
use super::cases::paged_attention::PagedLayout;
use super::compare::{compare, tolerance};
use super::paged_invariance::{upload_f32, upload_u32};
use crate::backend::{Backend, BatchInvariance};
use crate::dtype::DType;
use crate::op::{Op, SEQ_FIELDS};
use crate::util::{seed, Rng};

const HQ: usize = 8;
const HKV: usize = 2;
const DH: usize = 64;
const BS: usize = 16;

/// Output rows [T, HQ * DH] of paged_attention over `seqs` (sequence id, q_count, kv_len) with
/// `tables` [S, mb]; a query row's values depend on its sequence id and index only.
fn attend(
    dev: &dyn Backend,
    l: &PagedLayout,
    seqs: &[(usize, usize, usize)],
    tables: &[u32],
    mb: usize,
) -> Result<Vec<f32>, String> {
    let e = |x: crate::error::Error| x.to_string();
    let t: usize = seqs.iter().map(|s| s.1).sum();
    let mut q = Vec::new();
    for &(s, n, _) in seqs {
        for i in 0..n {
            let mut r = Rng::new(seed(&format!("pguard-q-{s}-{i}")));
            q.extend((0..HQ * DH).map(|_| r.normal() as f32));
        }
    }
    let row = HKV * DH;
    let pshape = [l.nb, BS, HKV, DH];
    let kp = upload_f32(
        dev,
        DType::F32,
        &pshape,
        &l.pool(row, seed("pguard-k"), |s| l.seqs[s].1),
    )?;
    let vp = upload_f32(
        dev,
        DType::F32,
        &pshape,
        &l.pool(row, seed("pguard-v"), |s| l.seqs[s].1),
    )?;
    let mut words = Vec::new();
    let mut first = 0;
    for &(_, n, kv) in seqs {
        words.extend([first as u32, n as u32, kv as u32]);
        first += n;
    }
    let qt = upload_f32(dev, DType::F32, &[t, HQ, DH], &q)?;
    let bt = upload_u32(dev, &[seqs.len(), mb], tables)?;
    let sq = upload_u32(dev, &[seqs.len(), SEQ_FIELDS], &words)?;
    let o = dev.alloc(DType::F32, &[t, HQ, DH]).map_err(e)?;
    let op = Op::PagedAttention {
        scale: 1.0 / (DH as f32).sqrt(),
        block_size: BS,
    };
    dev.run(&op, &[&qt, &kp, &vp, &bt, &sq], &[&o]).map_err(e)?;
    dev.flush().map_err(e)?;
    Ok(DType::F32.decode_f32(&dev.download(&o).map_err(e)?))
}

/// Ok with a summary when the broken rows are all NaN and the sound rows keep their bits.
pub fn check(dev: &dyn Backend) -> Result<String, String> {
    // sequences: 0 sound (one query, 140 keys: three partitions), 1 a block id past the pool in
    // block 5 (keys 80..96, partition 1), 2 sound (one query, 30 keys), 3 inconsistent
    let sound = [(1, 140), (2, 100), (1, 30), (1, 20)];
    let l = PagedLayout::new(BS, &sound, false, 4, seed("pguard-layout"));
    let mb = l.mb;
    let mut tables = l.tables.clone();
    tables[mb + 5] = (l.nb + 7) as u32;
    let mut seqs: Vec<(usize, usize, usize)> = (0..4).map(|s| (s, sound[s].0, sound[s].1)).collect();
    seqs[3].2 = mb * BS + 1;
    let out = attend(dev, &l, &seqs, &tables, mb)?;
    let w = HQ * DH;
    let rows = |a: usize, n: usize| &out[a * w..(a + n) * w];
    for (what, a, n) in [("a block past the pool", 1, 2), ("an inconsistent description", 4, 1)] {
        if let Some(i) = rows(a, n).iter().position(|x| !x.is_nan()) {
            return Err(format!(
                "the rows of {what} should be NaN: element {i} is {}",
                rows(a, n)[i]
            ));
        }
    }
    // the sound sequences alone, in a batch of two (their own table rows)
    let alone_tables: Vec<u32> = [0, 2]
        .iter()
        .flat_map(|&s| l.tables[s * mb..(s + 1) * mb].to_vec())
        .collect();
    let alone = attend(dev, &l, &[(0, 1, 140), (2, 1, 30)], &alone_tables, mb)?;
    for (k, r) in [(0, 0), (1, 3)] {
        let (got, want) = (rows(r, 1), &alone[k * w..(k + 1) * w]);
        if let Some(i) = (0..w).find(|&i| got[i].to_bits() != want[i].to_bits() || !got[i].is_finite()) {
            return Err(format!(
                "sound row {r} next to broken ones: element {i} is {}, alone {}",
                got[i], want[i]
            ));
        }
    }
    let lone = lone_prefill(dev)?;
    Ok(format!(
        "broken rows all NaN, sound rows bit-identical to their own batch; {lone}"
    ))
}

/// The lone-prefill half of `check`: one sequence, 30 queries at positions 70..100 (keys of two
/// partitions and more than one tile of most devices' key blocks).
fn lone_prefill(dev: &dyn Backend) -> Result<String, String> {
    const T: usize = 30;
    const KV: usize = 100;
    let l = PagedLayout::new(BS, &[(T, KV)], false, 4, seed("pguard-lone"));
    let mb = l.mb;
    let seqs = [(0, T, KV)];
    let run = |mode: BatchInvariance, tables: &[u32], seqs: &[(usize, usize, usize)]| {
        super::with_invariance(dev, mode, || attend(dev, &l, seqs, tables, mb))
    };
    let want = run(BatchInvariance::FewRows, &l.tables, &seqs)?;
    let got = run(BatchInvariance::Off, &l.tables, &seqs)?;
    let w = HQ * DH;
    let c = compare(
        DType::F32,
        &DType::F32.encode_f32(&got),
        &DType::F32.encode_f32(&want),
        tolerance("paged_attention", DType::F32),
    )
    .map_err(|m| format!("lone prefill against the invariant kernel: {m}"))?;
    // block 5 (keys 80..96) past the pool: rows at positions 80.. (row 10 on) see it
    let mut bad = l.tables.clone();
    bad[5] = (l.nb + 3) as u32;
    let out = run(BatchInvariance::Off, &bad, &seqs)?;
    let first_bad = 80 - (KV - T);
    for r in 0..T {
        let row = &out[r * w..(r + 1) * w];
        let nan = row.iter().all(|x| x.is_nan());
        let same = (0..w).all(|i| row[i].to_bits() == got[r * w + i].to_bits());
        if (r >= first_bad && !nan) || (r < first_bad && !same && !nan) {
            return Err(format!(
                "lone prefill, a block past the pool at keys 80..96: row {r} (position {}) should be {}",
                r + KV - T,
                if r >= first_bad { "NaN" } else { "unchanged or NaN" }
            ));
        }
    }
    for (what, kv) in [
        ("a kv length past its table", mb * BS + 1),
        ("fewer keys than queries", T - 1),
    ] {
        let out = run(BatchInvariance::Off, &l.tables, &[(0, T, kv)])?;
        if let Some(i) = out.iter().position(|x| !x.is_nan()) {
            return Err(format!(
                "lone prefill with {what}: element {i} is {}, should be NaN",
                out[i]
            ));
        }
    }
    Ok(format!(
        "lone prefill: nmse {:.2e} against the invariant kernel, guards hold",
        c.nmse
    ))
}
