//! `rlx generate MODEL.gguf --prompt ...`: stream a llama model's tokens.

use crate::model::require_file;
use crate::progress;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use rlx::gguf::GgufReader;
use rlx::llama::{
    generate, GenerateOptions, KvCacheDtype, LlamaConfig, LlamaModel, LlamaOptions, SamplerConfig,
    Tokenizer, WeightMode,
};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

/// How the weights are multiplied.
#[derive(Clone, Copy, ValueEnum)]
enum Weights {
    /// As stored (quantized blocks, ggml's math).
    Quantized,
    /// Decoded to f32 at load.
    F32,
}

/// Element type of the KV cache.
#[derive(Clone, Copy, ValueEnum)]
enum KvCache {
    /// Half precision, as llama.cpp stores it by default.
    F16,
    /// Single precision.
    F32,
}

/// `rlx generate` arguments.
#[derive(Args)]
pub struct GenerateArgs {
    /// A llama-family GGUF model.
    model: PathBuf,
    /// The prompt text (tokenized without a BOS token).
    #[arg(long)]
    prompt: String,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: u32,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    /// Keep the k most likely tokens (0: all).
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    /// Nucleus sampling mass (1: all).
    #[arg(long, default_value_t = 1.0)]
    top_p: f64,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    seed: u32,
    /// KV-cache positions (prompt + generated tokens); default: 512, at
    /// most the model's context length.
    #[arg(long)]
    context: Option<usize>,
    /// Weight handling.
    #[arg(long, value_enum, default_value = "quantized")]
    weights: Weights,
    /// Element type of the KV cache (f16, llama.cpp's default, halves its
    /// memory and traffic; new keys / values are rounded to it).
    #[arg(long, value_enum, default_value = "f16")]
    kv_cache: KvCache,
    /// Keep going after the end-of-sequence token.
    #[arg(long)]
    ignore_eos: bool,
    /// Print one JSON object (ids, text, speed) at the end instead of streaming.
    #[arg(long)]
    json: bool,
}

/// Runs `rlx generate`.
pub fn run(a: GenerateArgs) -> Result<()> {
    require_file(&a.model)?;
    let name = a.model.display().to_string();
    let spin = progress::spinner(&format!("loading {name}"));
    let loaded = (|| -> Result<(Tokenizer, LlamaModel)> {
        let r = GgufReader::open(&a.model)?;
        let tok = Tokenizer::from_gguf(r.metadata())?;
        let opts = LlamaOptions {
            weights: match a.weights {
                Weights::Quantized => WeightMode::Quantized,
                Weights::F32 => WeightMode::F32,
            },
            context: match a.context {
                Some(n) => n,
                None => LlamaConfig::from_gguf(r.metadata())?
                    .context_length
                    .min(512),
            },
            kv_cache: match a.kv_cache {
                KvCache::F16 => KvCacheDtype::F16,
                KvCache::F32 => KvCacheDtype::F32,
            },
            ..LlamaOptions::default()
        };
        Ok((tok, LlamaModel::from_reader(&r, opts)?))
    })();
    spin.finish_and_clear();
    let (tok, mut model) = loaded.with_context(|| name.clone())?;
    let prompt = tok.encode(&a.prompt, false);
    let opts = GenerateOptions {
        max_tokens: a.max_tokens as usize,
        sampler: SamplerConfig {
            temperature: a.temperature,
            top_k: a.top_k,
            top_p: a.top_p,
            seed: a.seed,
        },
        stop: match (a.ignore_eos, tok.eos()) {
            (false, Some(eos)) => vec![eos],
            _ => Vec::new(),
        },
    };
    let mut ids: Vec<u32> = Vec::new();
    let mut printed = 0;
    let mut out = std::io::stdout().lock();
    if !a.json {
        write!(out, "{}", a.prompt)?;
        out.flush()?;
    }
    let mut io_err = None;
    let g = generate(&mut model, &prompt, &opts, |id| {
        ids.push(id);
        if a.json || io_err.is_some() {
            return;
        }
        // Decode the whole continuation and print what is new, so a
        // character split over tokens prints once complete.
        let bytes = tok.decode_bytes(&ids);
        let done = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        if done > printed {
            if let Err(e) = out
                .write_all(&bytes[printed..done])
                .and_then(|_| out.flush())
            {
                io_err = Some(e);
            }
            printed = done;
        }
    })
    .with_context(|| name.clone())?;
    if let Some(e) = io_err {
        return Err(e.into());
    }
    let speed = g.decode_tokens_per_s();
    if a.json {
        let v = json!({
            "prompt_ids": prompt,
            "ids": g.tokens,
            "text": tok.decode(&g.tokens),
            "prefill_tokens_per_s": g.prefill_tokens_per_s(),
            "decode_tokens_per_s": speed,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        writeln!(out)?;
        drop(out);
        eprintln!(
            "{} prompt tokens at {:.1} tokens/s, {} generated at {:.1} tokens/s",
            g.prompt_tokens,
            g.prefill_tokens_per_s(),
            g.tokens.len(),
            speed
        );
    }
    Ok(())
}
