//! [`generate`]: prefill a prompt, then decode one token per step with the
//! KV cache, timing both phases.

use crate::error::Result;
use crate::model::LlamaModel;
use crate::sampler::{Sampler, SamplerConfig};
use std::time::{Duration, Instant};

/// Generation settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Tokens to generate at most.
    pub max_tokens: usize,
    /// Sampling settings.
    pub sampler: SamplerConfig,
    /// Stop after producing any of these ids (e.g. the EOS token); the stop
    /// token is kept in the output.
    pub stop: Vec<u32>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 32,
            sampler: SamplerConfig::greedy(),
            stop: Vec::new(),
        }
    }
}

/// What [`generate`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated ids (the prompt excluded).
    pub tokens: Vec<u32>,
    /// Prompt tokens processed.
    pub prompt_tokens: usize,
    /// Time of the prompt run.
    pub prefill_time: Duration,
    /// Time of the decode steps (each feeds one generated token back).
    pub decode_time: Duration,
    /// Decode steps run (`tokens.len() - 1` unless generation stopped early).
    pub decode_steps: usize,
}

impl Generation {
    /// Prompt tokens per second.
    pub fn prefill_tokens_per_s(&self) -> f64 {
        self.prompt_tokens as f64 / self.prefill_time.as_secs_f64().max(1e-9)
    }

    /// Decode steps per second.
    pub fn decode_tokens_per_s(&self) -> f64 {
        self.decode_steps as f64 / self.decode_time.as_secs_f64().max(1e-9)
    }
}

/// Runs `prompt` (token ids, non-empty) on a fresh cache and generates up
/// to `opts.max_tokens` tokens; `on_token` sees each one as it comes.
pub fn generate(
    model: &mut LlamaModel,
    prompt: &[u32],
    opts: &GenerateOptions,
    mut on_token: impl FnMut(u32),
) -> Result<Generation> {
    if prompt.is_empty() {
        return Err(crate::LlamaError::BadSetting {
            name: "prompt",
            expected: "at least one token",
            given: "no tokens".into(),
        });
    }
    let mut sampler = Sampler::new(opts.sampler)?;
    let mut cache = model.new_cache();
    cache.check_room(prompt.len() + opts.max_tokens.saturating_sub(1))?;
    let t0 = Instant::now();
    let mut last = model.forward_last(prompt, &mut cache)?;
    let prefill_time = t0.elapsed();
    let mut tokens = Vec::with_capacity(opts.max_tokens);
    let mut decode_time = Duration::ZERO;
    let mut decode_steps = 0;
    while tokens.len() < opts.max_tokens {
        let next = sampler.sample(&last);
        tokens.push(next);
        on_token(next);
        if opts.stop.contains(&next) || tokens.len() == opts.max_tokens {
            break;
        }
        let t = Instant::now();
        last = model.forward_last(&[next], &mut cache)?;
        decode_time += t.elapsed();
        decode_steps += 1;
    }
    Ok(Generation {
        tokens,
        prompt_tokens: prompt.len(),
        prefill_time,
        decode_time,
        decode_steps,
    })
}
