//! Penalties and min-p of one sequence on the device: its token counts row (kept on the host too,
//! so bumping a count uploads the one element), the ops' parameter rows, and the rows they write.
//! The ops take [R, V] rows with per-row parameters; a sequence is R = 1 here, and the batched
//! engine gives each sequence of a step its row.
use super::sampler::{min_p_margin, penalty_params, Sampling, TokenCounts};
use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::Result;
use crate::op::Op;
use crate::tensor::Tensor;

/// The device state of `Op::Penalties` (when a penalty is on) and `Op::MinP` (when min-p takes
/// effect) for one sequence.
pub struct Penalizer {
    /// counts [1, V] u32, params [1, 4] f32, out [1, V] f32
    penalties: Option<(Tensor, Tensor, Tensor)>,
    host: TokenCounts,
    /// margin [1, 1] f32, out [1, V] f32
    min_p: Option<(Tensor, Tensor)>,
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Penalizer {
    /// The state for a sequence starting with `prompt`, or None when `s` turns nothing on.
    pub fn new(dev: &dyn Backend, s: &Sampling, vocab: usize, prompt: &[u32]) -> Result<Option<Penalizer>> {
        if !s.has_penalties() && !s.uses_min_p() {
            return Ok(None);
        }
        let host = TokenCounts::new(vocab, prompt)?;
        let penalties = if s.has_penalties() {
            let counts = dev.alloc(DType::U32, &[1, vocab])?;
            let bytes: Vec<u8> = host.row().iter().flat_map(|c| c.to_le_bytes()).collect();
            dev.upload(&counts, &bytes)?;
            let params = dev.alloc(DType::F32, &[1, 4])?;
            dev.upload(&params, &f32_bytes(&penalty_params(s)))?;
            Some((counts, params, dev.alloc(DType::F32, &[1, vocab])?))
        } else {
            None
        };
        let min_p = if s.uses_min_p() {
            let margin = dev.alloc(DType::F32, &[1, 1])?;
            dev.upload(&margin, &f32_bytes(&[min_p_margin(s.min_p, s.temperature)]))?;
            Some((margin, dev.alloc(DType::F32, &[1, vocab])?))
        } else {
            None
        };
        Ok(Some(Penalizer { penalties, host, min_p }))
    }

    /// Records the ops over `logits` ([1, V]); returns the row to choose from.
    pub fn apply(&self, dev: &dyn Backend, logits: &Tensor) -> Result<Tensor> {
        let mut row = logits.clone();
        if let Some((counts, params, out)) = &self.penalties {
            dev.run(&Op::Penalties, &[&row, counts, params], &[out])?;
            row = out.clone();
        }
        if let Some((margin, out)) = &self.min_p {
            dev.run(&Op::MinP, &[&row, margin], &[out])?;
            row = out.clone();
        }
        Ok(row)
    }

    /// Counts `token` as generated: its entry on the host, then that one element on the device.
    pub fn push(&mut self, dev: &dyn Backend, token: u32) -> Result<()> {
        let c = self.host.add(token)?;
        if let Some((counts, _, _)) = &self.penalties {
            dev.upload(&counts.view(token as usize, &[1])?, &c.to_le_bytes())?;
        }
        Ok(())
    }
}
