//! The device's answers to `supports`, kept by what they depend on: the op with its parameters,
//! every operand's dtype and shape, and the batch invariance (the adapter's caps and tuning are
//! fixed for its life). A decode step asks the same questions every layer and every step (each
//! `run` asks before it records, and the model asks about its fused ops), and the contract check
//! and the families' limits behind an answer cost more host time than recording the dispatch.
use crate::backend::Support;
use crate::op::OpDesc;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// Entries kept at most: a serving engine's steps have as many token counts as it has batch
/// shapes, so the table is emptied when it grows past this (answers are cheap to make again).
const MAX_ENTRIES: usize = 4096;

#[derive(Default)]
pub(crate) struct Supported {
    table: Mutex<rustc_hash::FxHashMap<u64, Vec<(OpDesc, u8, Support)>>>,
    entries: std::sync::atomic::AtomicUsize,
}

impl Supported {
    /// The answer for `desc` under invariance `mode`: the kept one, else `ask()`'s, kept.
    pub(crate) fn get_or(&self, desc: &OpDesc, mode: u8, ask: impl FnOnce() -> Support) -> Support {
        let h = key_hash(desc, mode);
        if let Some(found) = self.table.lock().unwrap().get(&h).and_then(|v| {
            v.iter()
                .find(|(d, m, _)| *m == mode && d == desc)
                .map(|(_, _, s)| s.clone())
        }) {
            return found;
        }
        let answer = ask();
        let mut t = self.table.lock().unwrap();
        if self.entries.load(std::sync::atomic::Ordering::Relaxed) >= MAX_ENTRIES {
            t.clear();
            self.entries.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        t.entry(h).or_default().push((desc.clone(), mode, answer.clone()));
        self.entries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        answer
    }
}

/// A hash of what the answer depends on, the op by its variant (its parameters are compared on a
/// hit, never hashed: they are floats).
fn key_hash(desc: &OpDesc, mode: u8) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    std::mem::discriminant(&desc.op).hash(&mut h);
    mode.hash(&mut h);
    for t in desc.inputs.iter().chain(&desc.outputs) {
        t.dtype.hash(&mut h);
        t.shape.hash(&mut h);
    }
    desc.inputs.len().hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use crate::backend::wgpu::WgpuBackend;
    use crate::backend::{Backend, BatchInvariance};
    use crate::dtype::DType;
    use crate::op::{Op, OpDesc, TensorDesc, SEQ_FIELDS};

    /// An answer that depends on the batch invariance is kept apart per mode: a lone decode step's
    /// fused attention is the device's with the invariance off and refused under either
    /// invariant mode, asked in turn on one device (every adapter with its 12 bindings).
    #[test]
    fn answers_kept_per_invariance() {
        let Some(b) = WgpuBackend::all().into_iter().next() else {
            eprintln!("no wgpu adapter: skipped");
            return;
        };
        let (hq, hkv, dh, nb, bs, mb) = (4, 2, 64, 4, 16, 2);
        let t = |d: DType, s: &[usize]| TensorDesc::new(d, s);
        let desc = OpDesc::new(
            Op::RmsNormRopeKvAttention {
                eps: 1e-6,
                rotary_dim: dh,
                scale: 0.125,
                block_size: bs,
            },
            vec![
                t(DType::F32, &[1, hq + 2 * hkv, dh]),
                t(DType::BF16, &[dh]),
                t(DType::U32, &[1]),
                t(DType::F32, &[mb * bs, dh / 2]),
                t(DType::F32, &[mb * bs, dh / 2]),
                t(DType::U32, &[1]),
                t(DType::U32, &[1, mb]),
                t(DType::U32, &[1, SEQ_FIELDS]),
            ],
            vec![
                t(DType::F32, &[1, hq, dh]),
                t(DType::F32, &[nb, bs, hkv, dh]),
                t(DType::F32, &[nb, bs, hkv, dh]),
            ],
        );
        if !b.support_of(&desc).is_yes() {
            eprintln!(
                "{}: the fused op is refused with the invariance off here: skipped",
                b.name
            );
            return;
        }
        for mode in [
            BatchInvariance::Off,
            BatchInvariance::ManyRows,
            BatchInvariance::Off,
            BatchInvariance::FewRows,
        ] {
            b.set_batch_invariant(mode);
            assert_eq!(
                b.supports(&desc).is_yes(),
                mode == BatchInvariance::Off,
                "asked under {mode:?}"
            );
        }
        b.set_batch_invariant(BatchInvariance::Off);
    }
}
