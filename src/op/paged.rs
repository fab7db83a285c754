//! The paged KV ops' contracts: operand shapes (`check_shapes`, called by `OpDesc::check`) and the
//! contents of the small u32 operands a device cannot check before it runs: the batch description
//! (`check_paged_batch`) and the write slots (`check_slots`). The engine calls the content checks
//! on the host copies it uploads; the CPU reference calls them on what it reads, so a bad table is
//! an error naming the sequence and the field. A kernel given bad contents never reads or writes
//! outside its bindings (the row's output is NaN, an out-of-range slot is skipped).
//!
//! Layout: per layer a K pool and a V pool, each [NB, BS, Hkv, Dh] (NB blocks of BS token rows);
//! pool row r = block * BS + offset. A sequence's block table row lists its blocks in position
//! order: position j lives in row table[j / BS] * BS + j % BS. Blocks may be shared (a prefix
//! block two sequences read) and appear in any order in the pool.
use super::{Op, TensorDesc};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::shape_str;

/// u32 fields per sequence in the `seqs` operand: first query row, query count, kv length.
pub const SEQ_FIELDS: usize = 3;

/// One sequence of a paged batch (a row of `seqs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagedSeq {
    /// its first query row in q / o
    pub q_start: u32,
    /// its query rows (the new tokens of this step: 1 for decode, a chunk for prefill)
    pub q_count: u32,
    /// its keys after this step: cached + new
    pub kv_len: u32,
}

impl PagedSeq {
    /// Position of the sequence's first query row.
    pub fn first_pos(&self) -> usize {
        (self.kv_len - self.q_count) as usize
    }
}

/// Pool row of position `pos` of the sequence whose block table row is `table`.
pub fn paged_slot(table: &[u32], block_size: usize, pos: usize) -> u32 {
    table[pos / block_size] * block_size as u32 + (pos % block_size) as u32
}

/// Checks a batch description against T query rows, pools of `num_blocks` blocks of `block_size`
/// rows and block tables [S, mb] (row-major `tables`), and returns its sequences. The rules: the
/// sequences' query rows are packed in order (the first starts at row 0, each next one where the
/// previous ends, the last ends at T); 1 <= q_count <= kv_len <= mb * block_size; every block a
/// sequence's first kv_len positions use is < num_blocks (the rest of its row is not read).
pub fn check_paged_batch(
    op: &str,
    t: usize,
    num_blocks: usize,
    block_size: usize,
    tables: &[u32],
    mb: usize,
    seqs: &[u32],
) -> Result<Vec<PagedSeq>> {
    let bad = |detail: String| Err(Error::shape(op, detail));
    if seqs.len() % SEQ_FIELDS != 0 || tables.len() != mb * (seqs.len() / SEQ_FIELDS) {
        return bad(format!(
            "seqs has {} values and block_tables {}: expected [S, {SEQ_FIELDS}] and [S, {mb}]",
            seqs.len(),
            tables.len()
        ));
    }
    let mut out = Vec::with_capacity(seqs.len() / SEQ_FIELDS);
    let mut next = 0usize;
    for (s, f) in seqs.chunks(SEQ_FIELDS).enumerate() {
        let q = PagedSeq {
            q_start: f[0],
            q_count: f[1],
            kv_len: f[2],
        };
        let (start, count, kv) = (q.q_start as usize, q.q_count as usize, q.kv_len as usize);
        if start != next {
            return bad(format!(
                "seqs[{s}]: first query row {start}, expected {next} (rows are packed in order)"
            ));
        }
        if count == 0 || count > kv {
            return bad(format!("seqs[{s}]: query count {count} must be in 1..=kv length {kv}"));
        }
        if kv > mb * block_size {
            return bad(format!(
                "seqs[{s}]: kv length {kv} exceeds its block table of {mb} blocks x {block_size}"
            ));
        }
        let row = &tables[s * mb..(s + 1) * mb];
        if let Some(j) = (0..kv.div_ceil(block_size)).find(|&j| row[j] as usize >= num_blocks) {
            return bad(format!(
                "block_tables[{s}][{j}] = {} is not a block of the pool ({num_blocks} blocks)",
                row[j]
            ));
        }
        next = start + count;
        out.push(q);
    }
    if next != t {
        return bad(format!("the sequences' query rows end at {next}, q has {t} rows"));
    }
    Ok(out)
}

/// Checks KvWrite's slots against a pool of `rows` rows: each in range, none twice (two tokens
/// into one row would make the result depend on the order of writes).
pub fn check_slots(op: &str, slots: &[u32], rows: usize) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for (t, &s) in slots.iter().enumerate() {
        if s as usize >= rows {
            return Err(Error::shape(
                op,
                format!("slots[{t}] = {s} is past the pool's {rows} rows"),
            ));
        }
        if !seen.insert(s) {
            return Err(Error::shape(op, format!("slots[{t}] = {s} is written twice")));
        }
    }
    Ok(())
}

/// The operand shapes and dtypes of KvWrite, PagedAttention and PagedGatedAttention.
pub(super) fn check_shapes(op: &Op, i: &[TensorDesc], o: &[TensorDesc]) -> Result<()> {
    let name = op.name();
    let bad = |detail: String| Err(Error::shape(name, detail));
    let float = |t: &TensorDesc, what: &str| -> Result<()> {
        match t.dtype.is_float() {
            true => Ok(()),
            false => bad(format!("{what} must be a float dtype, got {}", t.dtype)),
        }
    };
    let u32s = |t: &TensorDesc, what: &str| -> Result<()> {
        match t.dtype {
            DType::U32 => Ok(()),
            d => bad(format!("{what} must be u32, got {d}")),
        }
    };
    // the pools: [NB, BS, Hkv, Dh], K and V alike, in one of the KV dtypes
    let (kp, vp) = match op {
        Op::KvWrite => (&o[0], &o[1]),
        Op::PagedAttention { .. } => (&i[1], &i[2]),
        _ => (&o[1], &o[2]),
    };
    if !matches!(kp.dtype, DType::F32 | DType::F16 | DType::BF16) || kp.shape.len() != 4 {
        return bad(format!(
            "k_pool must be [NB, BS, Hkv, Dh] in f32, f16 or bf16, got {} [{}]",
            kp.dtype,
            shape_str(&kp.shape)
        ));
    }
    if kp != vp {
        return bad(format!(
            "v_pool {} [{}] differs from k_pool {} [{}]",
            vp.dtype,
            shape_str(&vp.shape),
            kp.dtype,
            shape_str(&kp.shape)
        ));
    }
    let (nb, bs, hkv, dh) = (kp.shape[0], kp.shape[1], kp.shape[2], kp.shape[3]);
    if nb == 0 || bs == 0 || hkv == 0 || dh == 0 {
        return bad(format!("empty pool [{}]", shape_str(&kp.shape)));
    }
    if let Op::KvWrite = op {
        float(&i[0], "k")?;
        float(&i[1], "v")?;
        u32s(&i[2], "slots")?;
        let t = i[0].shape.first().copied().unwrap_or(0);
        if t == 0 || i[0].shape != [t, hkv, dh] || i[1].shape != i[0].shape {
            return bad(format!(
                "k and v must be [T, {hkv}, {dh}] with T > 0 (the pool's heads), got [{}] and [{}]",
                shape_str(&i[0].shape),
                shape_str(&i[1].shape)
            ));
        }
        if i[2].shape != [t] {
            return bad(format!("slots must be [{t}], got [{}]", shape_str(&i[2].shape)));
        }
        return Ok(());
    }
    let (block_size, q, bt, seqs) = match op {
        Op::PagedAttention { block_size, .. } => (*block_size, &i[0], &i[3], &i[4]),
        Op::PagedGatedAttention { block_size, .. } => (*block_size, &i[0], &i[7], &i[8]),
        _ => unreachable!("check_shapes is called for the paged ops"),
    };
    if bs != block_size {
        return bad(format!(
            "the pools' block size {bs} differs from block_size {block_size}"
        ));
    }
    float(q, "q")?;
    float(&o[0], "o")?;
    u32s(bt, "block_tables")?;
    u32s(seqs, "seqs")?;
    if q.shape.len() != 3 || q.shape[0] == 0 {
        return bad(format!(
            "q must be [T, Hq, Dh] with T > 0, got [{}]",
            shape_str(&q.shape)
        ));
    }
    let (t, hq) = (q.shape[0], q.shape[1]);
    let qdh = if let Op::PagedGatedAttention { .. } = op {
        2 * dh
    } else {
        dh
    };
    if q.shape[2] != qdh {
        return bad(format!(
            "q's last dim must be {qdh} (the pools' head_dim {dh}), got {}",
            q.shape[2]
        ));
    }
    if hq == 0 || hq % hkv != 0 {
        return bad(format!("Hq {hq} must be a multiple of Hkv {hkv}"));
    }
    if bt.shape.len() != 2 || bt.shape[0] == 0 || bt.shape[1] == 0 {
        return bad(format!(
            "block_tables must be [S, MB] with S, MB > 0, got [{}]",
            shape_str(&bt.shape)
        ));
    }
    let (s, mb) = (bt.shape[0], bt.shape[1]);
    if seqs.shape != [s, SEQ_FIELDS] {
        return bad(format!(
            "seqs must be [{s}, {SEQ_FIELDS}], got [{}]",
            shape_str(&seqs.shape)
        ));
    }
    if s > t {
        return bad(format!("{s} sequences for {t} query rows (each has at least one)"));
    }
    if o[0].shape != [t, hq, dh] {
        return bad(format!("o must be [{t}, {hq}, {dh}], got [{}]", shape_str(&o[0].shape)));
    }
    if let Op::PagedGatedAttention { rotary_dim, .. } = *op {
        for (x, w) in [(&i[1], "k"), (&i[2], "v")] {
            float(x, w)?;
            if x.shape != [t, hkv, dh] {
                return bad(format!("{w} must be [{t}, {hkv}, {dh}], got [{}]", shape_str(&x.shape)));
            }
        }
        for (x, w) in [(&i[3], "q_norm"), (&i[4], "k_norm")] {
            float(x, w)?;
            if x.shape != [dh] {
                return bad(format!("{w} must be [{dh}], got [{}]", shape_str(&x.shape)));
            }
        }
        if rotary_dim == 0 || rotary_dim % 2 != 0 || rotary_dim > dh {
            return bad(format!("rotary_dim {rotary_dim} must be even, > 0, <= head_dim {dh}"));
        }
        for (x, w) in [(&i[5], "cos"), (&i[6], "sin")] {
            if x.dtype != DType::F32 || x.shape.len() != 2 || x.shape[1] != rotary_dim / 2 || x.shape != i[5].shape {
                return bad(format!("{w} must be f32 [P, {}]", rotary_dim / 2));
            }
        }
        if mb * bs > i[5].shape[0] {
            return bad(format!(
                "block tables reach position {} past the RoPE table of {}",
                mb * bs - 1,
                i[5].shape[0]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sequences: rows 0..1 (decode at kv 17, two blocks) and 1..4 (a chunk of 3 at kv 5).
    fn ok_batch() -> (Vec<u32>, Vec<u32>) {
        (vec![4, 2, 9, 0, 7, 9], vec![0, 1, 17, 1, 3, 5])
    }

    #[test]
    fn a_consistent_batch_passes() {
        let (tables, seqs) = ok_batch();
        let s = check_paged_batch("paged_attention", 4, 5, 16, &tables, 3, &seqs).unwrap();
        assert_eq!(s[1].first_pos(), 2);
        assert_eq!(paged_slot(&tables[..3], 16, 16), 2 * 16);
    }

    #[test]
    fn bad_contents_are_named() {
        let (tables, seqs) = ok_batch();
        let err = |t: &[u32], s: &[u32], rows: usize| {
            check_paged_batch("paged_attention", rows, 5, 16, t, 3, s)
                .unwrap_err()
                .to_string()
        };
        // a block id past the pool, in a used entry (the unused entry 9 is not read)
        let mut t = tables.clone();
        t[1] = 5;
        assert!(
            err(&t, &seqs, 4).contains("block_tables[0][1] = 5"),
            "{}",
            err(&t, &seqs, 4)
        );
        let mut s = seqs.clone();
        s[3] = 2;
        assert!(err(&tables, &s, 4).contains("seqs[1]: first query row 2, expected 1"));
        let mut s = seqs.clone();
        s[4] = 6;
        assert!(err(&tables, &s, 7).contains("query count 6 must be in 1..=kv length 5"));
        let mut s = seqs.clone();
        s[2] = 49;
        assert!(err(&tables, &s, 4).contains("kv length 49 exceeds its block table of 3 blocks x 16"));
        assert!(err(&tables, &seqs, 5).contains("end at 4, q has 5 rows"));
        assert!(check_slots("kv_write", &[3, 80], 80)
            .unwrap_err()
            .to_string()
            .contains("slots[1] = 80"));
        assert!(check_slots("kv_write", &[3, 3], 80)
            .unwrap_err()
            .to_string()
            .contains("written twice"));
    }
}
