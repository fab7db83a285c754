//! Choosing each sampled row's token (the serving engine's half of a step after the forward):
//! one `Op::Sample` over the rows on the device, read back with the step, or argmax and the host
//! sampler where the device refuses the op. A token's draw depends only on its row, the request's
//! seed and the token's index.
use super::ServeEngine;
use crate::backend::{ReadTicket, Support};
use crate::dtype::DType;
use crate::engine::sampler::{log_softmax, sample_params, top_logprobs, uniform24, Sampler, Sampling};
use crate::error::Result;
use crate::op::{Op, OpDesc, TensorDesc};
use crate::serve::{PlannedSeq, RequestId, SamplingParams};

/// The picks of a step: none (it samples no row), a read-back in flight of `n` ids then `n`
/// logprobs, or already chosen on the host.
#[allow(clippy::type_complexity)]
pub(super) enum Pick {
    Nothing,
    Device(ReadTicket, usize),
    Host(Vec<(RequestId, u32, Option<(Option<f64>, Vec<(u32, f64)>)>)>),
}

/// `Op::Sample`'s description for `r` rows of `v` logits and `k` alternatives.
pub(super) fn sample_desc(r: usize, v: usize, k: usize) -> OpDesc {
    OpDesc::new(
        Op::Sample { k },
        vec![
            TensorDesc::new(DType::F32, &[r, v]),
            TensorDesc::new(DType::F32, &[r, 4]),
        ],
        vec![
            TensorDesc::new(DType::U32, &[r, 1 + k]),
            TensorDesc::new(DType::F32, &[r, 1 + k]),
        ],
    )
}

/// The uniform number of one token's draw: the first of its stream (`token_sampling`).
fn token_u(p: &SamplingParams, generated: usize) -> f32 {
    uniform24(&mut crate::util::Rng::new(token_sampling(p, generated).seed))
}

/// The sampling parameters of `Sampler` for one token: the request's seed mixed with the token's
/// index, so each token has its own stream (the same whatever else runs, and after a preemption).
fn token_sampling(p: &SamplingParams, generated: usize) -> Sampling {
    let mix = (generated as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Sampling {
        temperature: p.temperature,
        top_k: p.top_k,
        top_p: p.top_p,
        seed: p.seed ^ mix,
        ..Sampling::default()
    }
}

impl ServeEngine {
    /// Records the choice of each sampled row's token (`asks`, rows in plan order): one
    /// `Op::Sample` over the rows into picks buffer `picked`, submitted with its read-back. Where
    /// the device refuses the op: argmax and the host sampler, now. Returns the alternatives
    /// asked (K) and the pending picks.
    pub(super) fn record_pick(&self, asks: &[&PlannedSeq], picked: usize) -> Result<(usize, Pick)> {
        let dev = self.engine.dev.as_ref();
        let (r, v) = (asks.len(), self.engine.cfg.vocab_size);
        let k = asks
            .iter()
            .filter_map(|q| q.sampling.logprobs)
            .max()
            .unwrap_or(0)
            .min(v);
        let op = Op::Sample { k };
        if let Support::No(why) = dev.supports(&sample_desc(r, v, k)) {
            log::debug!("sampling on the host: {why}");
            return Ok((k, Pick::Host(self.pick_on_host(asks)?)));
        }
        let params: Vec<f32> = asks
            .iter()
            .flat_map(|q| {
                let (p, generated) = (&q.sampling, q.generated);
                let greedy = token_sampling(p, generated).is_greedy();
                let u = if greedy { 0.0 } else { token_u(p, generated) };
                sample_params(if greedy { 0.0 } else { p.temperature }, p.top_k, p.top_p, u)
            })
            .collect();
        let pv = self.bufs.sample_params.view(0, &[r, 4])?;
        dev.upload(&pv, &params.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())?;
        let n = r * (1 + k);
        let buf = &self.bufs.picked[picked];
        let ids = buf.view(0, &[r, 1 + k])?;
        let lps = buf.view(n, &[r, 1 + k])?.bitcast(DType::F32)?;
        dev.run(
            &op,
            &[&self.family.logits_and_next().0.view(0, &[r, v])?, &pv],
            &[&ids, &lps],
        )?;
        // the one read-back of the step: ids and logprobs together
        Ok((k, Pick::Device(dev.start_read(&buf.view(0, &[2 * n])?)?, n)))
    }

    /// Each sampled row's (request, token, (logprob, alternatives) when asked), rows in plan order,
    /// once the picks of `record_pick` are back.
    #[allow(clippy::type_complexity)]
    pub(super) fn finish(
        &self,
        asks: Vec<&PlannedSeq>,
        k: usize,
        read: Pick,
    ) -> Result<Vec<(RequestId, u32, Option<(Option<f64>, Vec<(u32, f64)>)>)>> {
        let (ticket, n) = match read {
            Pick::Nothing => return Ok(vec![]),
            Pick::Host(done) => return Ok(done),
            Pick::Device(t, n) => (t, n),
        };
        let bytes = self.engine.dev.finish_read(ticket)?;
        let word = |i: usize| u32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
        Ok(asks
            .iter()
            .enumerate()
            .map(|(row, q)| {
                let at = row * (1 + k);
                let lp = q.sampling.logprobs.map(|kq| {
                    let alts = (1..=kq.min(k)).map(|c| (word(at + c), f32::from_bits(word(n + at + c)) as f64));
                    (Some(f32::from_bits(word(n + at)) as f64), alts.collect())
                });
                (q.id, word(at), lp)
            })
            .collect())
    }

    /// `pick` where the device refuses `Op::Sample`: argmax on the device, and a row that samples
    /// or asks for logprobs read back whole and sampled on the host.
    #[allow(clippy::type_complexity)]
    fn pick_on_host(
        &self,
        rows: &[&PlannedSeq],
    ) -> Result<Vec<(RequestId, u32, Option<(Option<f64>, Vec<(u32, f64)>)>)>> {
        let dev = self.engine.dev.as_ref();
        let (r, v) = (rows.len(), self.engine.cfg.vocab_size);
        let (logits_t, next_t) = self.family.logits_and_next();
        let logits = logits_t.view(0, &[r, v])?;
        let next = next_t.view(0, &[r])?;
        dev.run(&Op::Argmax, &[&logits], &[&next])?;
        let argmax = dev.download(&next)?;
        let mut out = Vec::with_capacity(r);
        for (row, q) in rows.iter().enumerate() {
            let (p, generated) = (&q.sampling, q.generated);
            let mut tok = u32::from_le_bytes(argmax[row * 4..row * 4 + 4].try_into().unwrap());
            let sampling = token_sampling(p, generated);
            let mut lp = None;
            if !sampling.is_greedy() || p.logprobs.is_some() {
                let bytes = dev.download(&logits_t.view(row * v, &[1, v])?)?;
                let l = DType::F32.decode_f32(&bytes);
                if !sampling.is_greedy() {
                    tok = Sampler::new(sampling).sample(&l);
                }
                if let Some(k) = p.logprobs {
                    let lps = log_softmax(&l);
                    lp = Some((Some(lps[tok as usize]), top_logprobs(&lps, k)));
                }
            }
            out.push((q.id, tok, lp));
        }
        Ok(out)
    }
}
