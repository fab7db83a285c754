//! The hybrid-state ops' contracts (Qwen3.5's Gated DeltaNet layers over a packed batch):
//! `CausalConv1dBatch` and `GdnBatch` (and `GdnConvNorm`, a composition over them:
//! `gdn_conv_norm_wiring`). Operand shapes (`check_shapes`, called by `OpDesc::check`)
//! and the contents of the per-sequence descriptor (`check_state_batch`), which a device cannot
//! check before it runs: the engine calls it on what it uploads, the CPU reference on what it
//! reads. A kernel given a bad descriptor never reads or writes outside its bindings (a sequence
//! whose rows or slot are out of range is skipped).
//!
//! Layout: per linear-attention layer a conv state pool [N, K-1, C] and a recurrent state pool
//! [N, nv, dk, dv], both f32, N = the engine's max_seqs; a running sequence owns one slot of each
//! for as long as it runs (the scheduler's `state_slot`). The descriptor `seqs` [S, 4] (u32) gives
//! per sequence: its first token row, its token count, its state slot, and 1 if it starts fresh
//! (the chunk's first position is 0: the state is taken as zero and the slot is not read) else 0.
use super::{gdn_dims, Op, TensorDesc};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::shape_str;

/// `GdnConvNorm`'s three parts with their operands, in order: (causal_conv1d_batch, its inputs,
/// its outputs), (gdn_batch, ...), (rms_norm_gated, ...), given the op's inputs `i` [x, conv_w, b,
/// a, a_log, dt_bias, seqs, z, norm_w] and outputs `o` [y, rec_pool, conv_pool], and the
/// composition's f32 intermediates `u` [T, C] (the conv's output) and `core` [T, nv, dv]
/// (gdn_batch's). Operands are tensors or their descriptions.
pub fn gdn_conv_norm_wiring<T: Clone>(op: &Op, i: &[T], o: &[T], u: T, core: T) -> [(Op, Vec<T>, Vec<T>); 3] {
    let [conv, gdn, norm] = op
        .gdn_conv_norm_parts()
        .expect("gdn_conv_norm_wiring is for gdn_conv_norm");
    let c = |k: usize| i[k].clone();
    [
        (conv, vec![c(0), c(1), c(6)], vec![u.clone(), o[2].clone()]),
        (
            gdn,
            vec![u, c(2), c(3), c(4), c(5), c(6)],
            vec![core.clone(), o[1].clone()],
        ),
        (norm, vec![core, c(7), c(8)], vec![o[0].clone()]),
    ]
}

/// u32 fields per sequence in the state descriptor: first row, token count, state slot, fresh.
pub const STATE_SEQ_FIELDS: usize = 4;

/// One sequence of a hybrid-state batch (a row of the descriptor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateSeq {
    /// its first token row in the packed operands
    pub row: u32,
    /// its token rows this step (1 for decode, a chunk for prefill)
    pub count: u32,
    /// its slot in the state pools
    pub slot: u32,
    /// the state starts at zero (the sequence's first chunk); the slot's old contents are not read
    pub fresh: bool,
}

impl StateSeq {
    /// The descriptor's four words.
    pub fn words(&self) -> [u32; STATE_SEQ_FIELDS] {
        [self.row, self.count, self.slot, self.fresh as u32]
    }
}

/// The descriptor of a step, from its paged batch description (`check_paged_batch`'s sequences:
/// the rows, and fresh = the chunk starts at position 0) and each sequence's state slot.
pub fn state_seq_words(seqs: &[super::PagedSeq], slots: &[u32]) -> Vec<u32> {
    seqs.iter()
        .zip(slots)
        .flat_map(|(s, &slot)| {
            StateSeq {
                row: s.q_start,
                count: s.q_count,
                slot,
                fresh: s.first_pos() == 0,
            }
            .words()
        })
        .collect()
}

/// Checks a descriptor against T token rows and pools of `n_slots` slots, and returns its
/// sequences. The rules: rows packed in order (the first starts at 0, each next one where the
/// previous ends, the last ends at T); count >= 1; slot < n_slots; no slot twice (two sequences
/// writing one state would race); fresh is 0 or 1.
pub fn check_state_batch(op: &str, t: usize, n_slots: usize, seqs: &[u32]) -> Result<Vec<StateSeq>> {
    let bad = |detail: String| Err(Error::shape(op, detail));
    if seqs.len() % STATE_SEQ_FIELDS != 0 {
        return bad(format!(
            "seqs has {} values: expected [S, {STATE_SEQ_FIELDS}]",
            seqs.len()
        ));
    }
    let mut out = Vec::with_capacity(seqs.len() / STATE_SEQ_FIELDS);
    let mut used = std::collections::HashSet::new();
    let mut next = 0usize;
    for (s, f) in seqs.chunks(STATE_SEQ_FIELDS).enumerate() {
        let (row, count, slot) = (f[0] as usize, f[1] as usize, f[2] as usize);
        if row != next {
            return bad(format!(
                "seqs[{s}]: first row {row}, expected {next} (rows are packed in order)"
            ));
        }
        if count == 0 {
            return bad(format!("seqs[{s}]: token count 0 (each sequence has at least one)"));
        }
        if slot >= n_slots {
            return bad(format!(
                "seqs[{s}]: state slot {slot} is not a slot of the pool ({n_slots} slots)"
            ));
        }
        if !used.insert(slot) {
            return bad(format!("seqs[{s}]: state slot {slot} is used twice"));
        }
        if f[3] > 1 {
            return bad(format!("seqs[{s}]: fresh must be 0 or 1, got {}", f[3]));
        }
        next = row + count;
        out.push(StateSeq {
            row: f[0],
            count: f[1],
            slot: f[2],
            fresh: f[3] == 1,
        });
    }
    if next != t {
        return bad(format!("the sequences' rows end at {next}, the batch has {t} rows"));
    }
    Ok(out)
}

/// The operand shapes and dtypes of CausalConv1dBatch and GdnBatch.
pub(super) fn check_shapes(op: &Op, i: &[TensorDesc], o: &[TensorDesc]) -> Result<()> {
    let name = op.name();
    let bad = |detail: String| Err(Error::shape(name, detail));
    let float = |t: &TensorDesc, what: &str| -> Result<()> {
        match t.dtype.is_float() {
            true => Ok(()),
            false => bad(format!("{what} must be a float dtype, got {}", t.dtype)),
        }
    };
    let (seqs, pool) = match op {
        Op::CausalConv1dBatch => (&i[2], &o[1]),
        Op::GdnBatch => (&i[5], &o[1]),
        _ => unreachable!("hybrid::check_shapes is called for the hybrid-state ops"),
    };
    if seqs.dtype != DType::U32 || seqs.shape.len() != 2 || seqs.shape[1] != STATE_SEQ_FIELDS || seqs.shape[0] == 0 {
        return bad(format!(
            "seqs must be u32 [S, {STATE_SEQ_FIELDS}] with S > 0, got {} [{}]",
            seqs.dtype,
            shape_str(&seqs.shape)
        ));
    }
    // f32: a conv state holds past inputs exactly and a recurrent state is carried in f32, so a
    // sequence's bits do not depend on whether its state went through the pool between chunks
    if pool.dtype != DType::F32 || pool.shape.first().copied().unwrap_or(0) == 0 {
        return bad(format!(
            "the state pool must be f32 with at least one slot, got {} [{}]",
            pool.dtype,
            shape_str(&pool.shape)
        ));
    }
    let s = seqs.shape[0];
    let x = &i[0];
    if x.shape.len() != 2 || x.shape[0] == 0 {
        return bad(format!(
            "{} must be [T, C] with T > 0, got [{}]",
            if let Op::GdnBatch = op { "qkv" } else { "x" },
            shape_str(&x.shape)
        ));
    }
    let t = x.shape[0];
    if s > t {
        return bad(format!("{s} sequences for {t} rows (each has at least one)"));
    }
    match op {
        Op::CausalConv1dBatch => {
            for (d, w) in [(&i[0], "x"), (&i[1], "w"), (&o[0], "y")] {
                float(d, w)?;
            }
            let c = x.shape[1];
            let k = i[1].shape.get(1).copied().unwrap_or(0);
            if i[1].shape.len() != 2 || i[1].shape[0] != c || k < 2 {
                return bad(format!(
                    "w must be [{c}, K] with K >= 2, got [{}]",
                    shape_str(&i[1].shape)
                ));
            }
            if pool.shape.len() != 3 || pool.shape[1..] != [k - 1, c] {
                return bad(format!(
                    "conv_pool must be [N, {}, {c}], got [{}]",
                    k - 1,
                    shape_str(&pool.shape)
                ));
            }
            if o[0].shape != x.shape {
                return bad(format!("y must be [{t}, {c}], got [{}]", shape_str(&o[0].shape)));
            }
        }
        Op::GdnBatch => {
            for (d, w) in [
                (&i[0], "qkv"),
                (&i[1], "b"),
                (&i[2], "a"),
                (&i[3], "a_log"),
                (&i[4], "dt_bias"),
                (&o[0], "o"),
            ] {
                float(d, w)?;
            }
            if pool.shape.len() != 4 {
                return bad(format!(
                    "rec_pool must be [N, nv, dk, dv], got [{}]",
                    shape_str(&pool.shape)
                ));
            }
            let (_, _, nv, _, dv) = gdn_dims(&x.shape, &pool.shape[1..]).map_err(|d| Error::shape(name, d))?;
            for (d, w) in [(&i[1], "b"), (&i[2], "a")] {
                if d.shape != [t, nv] {
                    return bad(format!("{w} must be [{t}, {nv}], got [{}]", shape_str(&d.shape)));
                }
            }
            for (d, w) in [(&i[3], "a_log"), (&i[4], "dt_bias")] {
                if d.shape != [nv] {
                    return bad(format!("{w} must be [{nv}], got [{}]", shape_str(&d.shape)));
                }
            }
            if o[0].shape != [t, nv, dv] {
                return bad(format!("o must be [{t}, {nv}, {dv}], got [{}]", shape_str(&o[0].shape)));
            }
        }
        _ => unreachable!(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consistent_descriptor_passes_and_bad_ones_are_named() {
        // a decode row in slot 5 (continued), a fresh chunk of 3 in slot 0
        let ok = [0, 1, 5, 0, 1, 3, 0, 1];
        let s = check_state_batch("gdn_batch", 4, 6, &ok).unwrap();
        assert_eq!(
            s[1],
            StateSeq {
                row: 1,
                count: 3,
                slot: 0,
                fresh: true
            }
        );
        let err = |v: &[u32], t: usize| check_state_batch("gdn_batch", t, 6, v).unwrap_err().to_string();
        let mut v = ok;
        v[4] = 2;
        assert!(
            err(&v, 4).contains("seqs[1]: first row 2, expected 1"),
            "{}",
            err(&v, 4)
        );
        let mut v = ok;
        v[5] = 0;
        assert!(err(&v, 1).contains("seqs[1]: token count 0"));
        let mut v = ok;
        v[6] = 6;
        assert!(err(&v, 4).contains("state slot 6 is not a slot of the pool (6 slots)"));
        let mut v = ok;
        v[6] = 5;
        assert!(err(&v, 4).contains("state slot 5 is used twice"));
        let mut v = ok;
        v[3] = 2;
        assert!(err(&v, 4).contains("fresh must be 0 or 1"));
        assert!(err(&ok, 5).contains("end at 4, the batch has 5 rows"));
        assert!(err(&ok[..7], 4).contains("expected [S, 4]"));
    }

    #[test]
    fn words_from_a_paged_batch() {
        use crate::op::PagedSeq;
        let seqs = [
            PagedSeq {
                q_start: 0,
                q_count: 1,
                kv_len: 17,
            },
            PagedSeq {
                q_start: 1,
                q_count: 3,
                kv_len: 3,
            },
        ];
        assert_eq!(state_seq_words(&seqs, &[5, 0]), vec![0, 1, 5, 0, 1, 3, 0, 1]);
    }
}
