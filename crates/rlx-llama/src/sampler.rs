//! [`Sampler`]: picks the next token from a row of logits.
//!
//! With `temperature == 0` it is greedy (the first maximum). Otherwise, in
//! f64: scale the logits by `1 / temperature`; order the tokens by scaled
//! logit, descending (ties: lower id first); keep the `top_k` first (0: all);
//! softmax over those; keep the shortest prefix whose cumulative probability
//! reaches `top_p` (1: all); renormalize by the prefix's running sum; draw
//! `u` from numpy's `RandomState(seed).random_sample()` stream and take the
//! first token whose cumulative probability exceeds `u`. The same steps in
//! numpy give the same tokens (`tools/gen_llama_fixtures.py`).

use crate::error::{LlamaError, Result};
use rlx_rng::RandomState;

/// Sampling settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerConfig {
    /// Softmax temperature; 0 picks the most likely token.
    pub temperature: f64,
    /// Keep only the `top_k` most likely tokens (0: no limit).
    pub top_k: usize,
    /// Keep the fewest tokens whose probabilities sum to at least `top_p`
    /// (1: no limit).
    pub top_p: f64,
    /// Seed of the random stream.
    pub seed: u32,
}

impl SamplerConfig {
    /// Greedy decoding.
    pub fn greedy() -> SamplerConfig {
        SamplerConfig {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
        }
    }
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig::greedy()
    }
}

/// A seeded token sampler.
pub struct Sampler {
    config: SamplerConfig,
    rng: RandomState,
}

impl Sampler {
    /// A sampler; temperatures below 0, `top_p` outside (0, 1] or a
    /// non-finite value are errors.
    pub fn new(config: SamplerConfig) -> Result<Sampler> {
        if !(config.temperature.is_finite() && config.temperature >= 0.0) {
            return Err(LlamaError::BadSetting {
                name: "temperature",
                expected: "a finite number >= 0",
                given: config.temperature.to_string(),
            });
        }
        if !(config.top_p > 0.0 && config.top_p <= 1.0) {
            return Err(LlamaError::BadSetting {
                name: "top_p",
                expected: "a number in (0, 1]",
                given: config.top_p.to_string(),
            });
        }
        Ok(Sampler {
            config,
            rng: RandomState::new(config.seed),
        })
    }

    /// The settings.
    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// The next token for one row of logits (`logits` must not be empty).
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        let c = self.config;
        if c.temperature == 0.0 || c.top_k == 1 {
            return argmax(logits);
        }
        let scaled: Vec<f64> = logits.iter().map(|&l| l as f64 / c.temperature).collect();
        let mut order: Vec<u32> = (0..logits.len() as u32).collect();
        let desc = |a: &u32, b: &u32| scaled[*b as usize].total_cmp(&scaled[*a as usize]);
        if c.top_k > 0 && c.top_k < order.len() {
            order.select_nth_unstable_by(c.top_k - 1, |a, b| desc(a, b).then(a.cmp(b)));
            order.truncate(c.top_k);
        }
        order.sort_by(|a, b| desc(a, b).then(a.cmp(b)));
        let top = scaled[order[0] as usize];
        let mut probs: Vec<f64> = order
            .iter()
            .map(|&t| (scaled[t as usize] - top).exp())
            .collect();
        normalize(&mut probs);
        if c.top_p < 1.0 {
            let mut run = 0.0;
            let keep = probs
                .iter()
                .position(|&p| {
                    run += p;
                    run >= c.top_p
                })
                .map_or(probs.len(), |i| i + 1);
            probs.truncate(keep);
            normalize(&mut probs);
        }
        let u = self.rng.random_sample(1)[0];
        let mut run = 0.0;
        for (i, &p) in probs.iter().enumerate() {
            run += p;
            if u < run {
                return order[i];
            }
        }
        order[probs.len() - 1]
    }
}

/// Divides by the running (left-to-right) sum, as numpy's `cumsum()[-1]`.
fn normalize(p: &mut [f64]) {
    let total: f64 = p.iter().fold(0.0, |a, &b| a + b);
    p.iter_mut().for_each(|v| *v /= total);
}

/// The index of the first maximum.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}
