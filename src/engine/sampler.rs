//! Choosing the next token. Greedy runs on the device (argmax, one u32 read back); the other modes
//! read the logits row back and sample on the host with a seeded generator.
use crate::util::Rng;

#[derive(Clone, Debug)]
pub struct Sampling {
    pub temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
        }
    }
}

impl Sampling {
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0 || self.top_k == 1
    }
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
    /// Samples from a logits row with temperature, then top-k, then top-p (nucleus).
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        if self.cfg.is_greedy() {
            return top_logprobs(&log_softmax(logits), 1)[0].0;
        }
        let scaled: Vec<f32> = logits.iter().map(|l| l / self.cfg.temperature).collect();
        let lp = log_softmax(&scaled);
        let k = if self.cfg.top_k == 0 {
            lp.len()
        } else {
            self.cfg.top_k.min(lp.len())
        };
        let cands = top_logprobs(&lp, k);
        let mut kept = Vec::new();
        let mut mass = 0.0;
        for (id, l) in cands {
            kept.push((id, l.exp()));
            mass += l.exp();
            if mass >= self.cfg.top_p as f64 {
                break;
            }
        }
        let total: f64 = kept.iter().map(|k| k.1).sum();
        let mut u = self.rng.uniform() * total;
        for (id, p) in &kept {
            if u < *p {
                return *id;
            }
            u -= p;
        }
        kept.last().unwrap().0
    }
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
        });
        assert_eq!(s.sample(&logits), 1);
        let draw = |seed| {
            let mut s = Sampler::new(Sampling {
                temperature: 1.0,
                top_k: 0,
                top_p: 0.9,
                seed,
            });
            (0..20).map(|_| s.sample(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert!(
            draw(7).iter().all(|&t| t == 1 || t == 2 || t == 0),
            "top-p 0.9 keeps the head"
        );
    }
}
