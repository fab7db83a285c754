//! Choosing the next token. Greedy runs on the device (argmax, one u32 read back); the other modes
//! read the logits row back and sample on the host with a seeded generator, by the same integer
//! arithmetic as the device's `Op::Sample` (backend/cpu/sample.rs), which the serving engine runs. Penalties and min-p
//! run on the device before either (`Op::Penalties`, `Op::MinP`); this file holds what the host
//! gives those ops: their parameter rows and the token counts of a sequence.
use crate::error::{Error, Result};
use crate::op::PROMPT_SEEN;
use crate::util::Rng;

/// How the next token is chosen. The penalties and min-p follow vLLM and the OpenAI API.
#[derive(Clone, Debug)]
pub struct Sampling {
    pub temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub seed: u64,
    /// > 0; 1 = off. Every token seen in the prompt or the output: a positive logit is divided
    /// by it, a negative one multiplied.
    pub repetition_penalty: f32,
    /// In [-2, 2]; 0 = off. Subtracted once from every token that occurs in the output.
    pub presence_penalty: f32,
    /// In [-2, 2]; 0 = off. Subtracted once per occurrence in the output.
    pub frequency_penalty: f32,
    /// In [0, 1]; 0 = off. After the temperature, the tokens whose probability is below min_p
    /// times the top token's are dropped. Greedy ignores it.
    pub min_p: f32,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
            repetition_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            min_p: 0.0,
        }
    }
}

impl Sampling {
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0 || self.top_k == 1
    }
    /// Any of the repetition, presence or frequency penalties is on.
    pub fn has_penalties(&self) -> bool {
        self.repetition_penalty != 1.0 || self.presence_penalty != 0.0 || self.frequency_penalty != 0.0
    }
    /// Min-p takes effect: it is on and the choice is not greedy.
    pub fn uses_min_p(&self) -> bool {
        self.min_p > 0.0 && !self.is_greedy()
    }
    /// The penalties' and min-p's ranges; an error names the field and its range.
    pub fn check(&self) -> Result<()> {
        let bad =
            |field: &str, range: &str, v: f32| Err(Error::Other(format!("sampling: {field} must be {range}, got {v}")));
        let r = self.repetition_penalty;
        if !(r.is_finite() && r > 0.0) {
            return bad("repetition_penalty", "a number > 0 (1 = off)", r);
        }
        for (field, v) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ] {
            if !(-2.0..=2.0).contains(&v) {
                return bad(field, "in [-2, 2] (0 = off)", v);
            }
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return bad("min_p", "in [0, 1] (0 = off)", self.min_p);
        }
        Ok(())
    }
}

/// The params row of `Op::Penalties` for `s`: (rep, 1/rep rounded to f32, presence, frequency).
pub fn penalty_params(s: &Sampling) -> [f32; 4] {
    let rep = s.repetition_penalty;
    [rep, 1.0 / rep, s.presence_penalty, s.frequency_penalty]
}

/// The margin row of `Op::MinP` for min_p at `temperature`: probability p_i >= min_p * p_max at
/// temperature T is l_i >= l_max + T ln(min_p), so the margin is -T ln(min_p) (computed in f64,
/// rounded once). min_p = 0 gives +inf (off), min_p = 1 gives 0 (the top token and its ties).
pub fn min_p_margin(min_p: f32, temperature: f32) -> f32 {
    if min_p <= 0.0 {
        return f32::INFINITY;
    }
    if min_p >= 1.0 {
        return 0.0;
    }
    (-(temperature as f64) * (min_p as f64).ln()) as f32
}

/// One sequence's counts row of `Op::Penalties`, kept on the host beside the device copy: per
/// token, how often it occurs in the output, with `PROMPT_SEEN` set for the prompt's tokens.
#[derive(Clone, Debug)]
pub struct TokenCounts {
    counts: Vec<u32>,
}

impl TokenCounts {
    /// The row for a prompt over a vocabulary of `vocab`; a prompt id outside it is an error.
    pub fn new(vocab: usize, prompt: &[u32]) -> Result<TokenCounts> {
        let mut counts = vec![0u32; vocab];
        for &t in prompt {
            *counts.get_mut(t as usize).ok_or_else(|| outside(t, vocab))? |= PROMPT_SEEN;
        }
        Ok(TokenCounts { counts })
    }
    /// Counts one more occurrence of `token` in the output; returns its new entry.
    pub fn add(&mut self, token: u32) -> Result<u32> {
        let vocab = self.counts.len();
        let c = self
            .counts
            .get_mut(token as usize)
            .ok_or_else(|| outside(token, vocab))?;
        // the low 31 bits count; a sequence never gets near 2^31 tokens, but never carry into the flag
        if *c & !PROMPT_SEEN < !PROMPT_SEEN {
            *c += 1;
        }
        Ok(*c)
    }
    pub fn row(&self) -> &[u32] {
        &self.counts
    }
}

fn outside(token: u32, vocab: usize) -> Error {
    Error::Other(format!("token id {token} is outside the vocabulary of {vocab}"))
}

/// log_softmax in f64.
pub fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let mx = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let z: f64 = logits.iter().map(|&l| (l as f64 - mx).exp()).sum::<f64>().ln() + mx;
    logits.iter().map(|&l| l as f64 - z).collect()
}

/// The k best (id, logprob), descending, ties to the lower id.
pub fn top_logprobs(lp: &[f64], k: usize) -> Vec<(u32, f64)> {
    let mut idx: Vec<usize> = (0..lp.len()).collect();
    idx.sort_by(|&a, &b| {
        lp[b]
            .partial_cmp(&lp[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    idx.into_iter().take(k).map(|i| (i as u32, lp[i])).collect()
}

pub struct Sampler {
    cfg: Sampling,
    rng: Rng,
}

impl Sampler {
    pub fn new(cfg: Sampling) -> Self {
        let rng = Rng::new(cfg.seed);
        Sampler { cfg, rng }
    }
    pub fn cfg(&self) -> &Sampling {
        &self.cfg
    }
    /// Samples from a logits row with temperature, then top-k, then top-p (nucleus), and a draw
    /// by the next 24-bit uniform of the seeded generator: `Op::Sample`'s reference for one row,
    /// so the host and every device choose the same token for the same row and u.
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        let u = if self.cfg.is_greedy() {
            0.0
        } else {
            uniform24(&mut self.rng)
        };
        let c = &self.cfg;
        crate::backend::cpu::pick(logits, &sample_params(c.temperature, c.top_k, c.top_p, u))
    }
}

/// A uniform number in [0, 1) with 24 random bits: exactly what `Op::Sample` reads of u.
pub fn uniform24(rng: &mut Rng) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u32 << 24) as f32
}

/// The params row of `Op::Sample`: (scale, top_k, top_p, u), scale = log2(e) / T computed in f64
/// and rounded once (the kernels need no division), 0 for greedy (T <= 0).
pub fn sample_params(temperature: f32, top_k: usize, top_p: f32, u: f32) -> [f32; 4] {
    let scale = if temperature > 0.0 {
        (std::f64::consts::LOG2_E / temperature as f64) as f32
    } else {
        0.0
    };
    // top_k as an f32 is exact for every vocabulary the op takes (< 2^19); larger means all
    let k = if top_k >= crate::op::MAX_SAMPLE_VOCAB { 0 } else { top_k };
    [scale, k as f32, top_p, u]
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn top_k_one_is_greedy_and_seed_repeats() {
        let logits = [0.1f32, 2.0, 1.9, -1.0];
        let mut s = Sampler::new(Sampling {
            temperature: 1.0,
            top_k: 1,
            top_p: 1.0,
            seed: 3,
            ..Default::default()
        });
        assert_eq!(s.sample(&logits), 1);
        let draw = |seed| {
            let mut s = Sampler::new(Sampling {
                temperature: 1.0,
                top_k: 0,
                top_p: 0.9,
                seed,
                ..Default::default()
            });
            (0..20).map(|_| s.sample(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert!(
            draw(7).iter().all(|&t| t == 1 || t == 2 || t == 0),
            "top-p 0.9 keeps the head"
        );
    }

    #[test]
    fn off_by_default_and_the_params_rows() {
        let d = Sampling::default();
        assert!(!d.has_penalties() && !d.uses_min_p());
        assert_eq!(penalty_params(&d), [1.0, 1.0, 0.0, 0.0]);
        let s = Sampling {
            repetition_penalty: 1.3,
            presence_penalty: -0.5,
            frequency_penalty: 2.0,
            ..Default::default()
        };
        assert!(s.has_penalties());
        assert_eq!(penalty_params(&s), [1.3, 1.0 / 1.3f32, -0.5, 2.0]);
        // min-p only counts when sampling
        let m = Sampling {
            min_p: 0.1,
            ..Default::default()
        };
        assert!(!m.uses_min_p() && !m.has_penalties());
        assert!(Sampling { temperature: 0.7, ..m }.uses_min_p());
    }

    #[test]
    fn check_names_the_field_and_its_range() {
        let err = |s: Sampling| s.check().unwrap_err().to_string();
        let d = Sampling::default;
        assert!(d().check().is_ok());
        for r in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            let e = err(Sampling {
                repetition_penalty: r,
                ..d()
            });
            assert!(e.contains("repetition_penalty") && e.contains("> 0"), "{e}");
        }
        let e = err(Sampling {
            presence_penalty: 2.5,
            ..d()
        });
        assert!(e.contains("presence_penalty") && e.contains("[-2, 2]"), "{e}");
        let e = err(Sampling {
            frequency_penalty: -2.01,
            ..d()
        });
        assert!(e.contains("frequency_penalty") && e.contains("[-2, 2]"), "{e}");
        for m in [-0.1, 1.5, f32::NAN] {
            let e = err(Sampling { min_p: m, ..d() });
            assert!(e.contains("min_p") && e.contains("[0, 1]"), "{e}");
        }
        let edges = Sampling {
            presence_penalty: -2.0,
            frequency_penalty: 2.0,
            min_p: 1.0,
            ..d()
        };
        assert!(edges.check().is_ok());
    }

    /// The margin keeps exactly the tokens whose probability at temperature T is at least min_p
    /// times the top one's (rows away from the boundary), and its ends mean off and top-only.
    #[test]
    fn min_p_margin_keeps_what_min_p_keeps() {
        assert_eq!(min_p_margin(0.0, 0.8), f32::INFINITY);
        assert_eq!(min_p_margin(1.0, 0.8).to_bits(), 0.0f32.to_bits());
        let logits = [3.0f32, 1.0, 2.9, -4.0, 0.2, 2.0, f32::NEG_INFINITY];
        for (p, t) in [(0.1f32, 1.0f32), (0.3, 0.5), (0.05, 2.0)] {
            let kept = crate::backend::cpu::min_p(&logits, &[min_p_margin(p, t)], logits.len());
            let probs: Vec<f64> = log_softmax(&logits.map(|l| l / t)).iter().map(|l| l.exp()).collect();
            let top = probs.iter().cloned().fold(0.0, f64::max);
            for (j, (&k, &q)) in kept.iter().zip(&probs).enumerate() {
                let want = q >= p as f64 * top && q > 0.0;
                assert_eq!(k != f32::NEG_INFINITY, want, "min_p {p} T {t} token {j}");
            }
        }
    }

    #[test]
    fn token_counts_flag_the_prompt_and_count_the_output() {
        let mut c = TokenCounts::new(6, &[1, 3, 3]).unwrap();
        assert_eq!(c.row(), &[0, PROMPT_SEEN, 0, PROMPT_SEEN, 0, 0]);
        assert_eq!(c.add(3).unwrap(), PROMPT_SEEN | 1);
        assert_eq!(c.add(5).unwrap(), 1);
        assert_eq!(c.add(5).unwrap(), 2);
        assert_eq!(c.row(), &[0, PROMPT_SEEN, 0, PROMPT_SEEN | 1, 0, 2]);
        assert!(c.add(6).unwrap_err().to_string().contains("token id 6"));
        assert!(TokenCounts::new(6, &[9]).is_err());
    }

    /// Dropped tokens (-inf, as min-p leaves them) are never drawn; the others still are.
    #[test]
    fn sampling_never_draws_a_dropped_token() {
        let logits = [1.0f32, f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY, 0.5];
        let mut s = Sampler::new(Sampling {
            temperature: 1.5,
            seed: 11,
            ..Default::default()
        });
        let drawn: Vec<u32> = (0..200).map(|_| s.sample(&logits)).collect();
        assert!(drawn.iter().all(|&t| t != 1 && t != 3), "{drawn:?}");
        assert!([0, 2, 4].iter().all(|t| drawn.contains(t)), "{drawn:?}");
    }
}
