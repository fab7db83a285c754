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
