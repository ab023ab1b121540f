//! [`LlamaModel`]: the compiled step graphs of a GGUF llama model and the
//! host-side work around them (embedding lookup, RoPE angles, masks, the
//! KV cache).

use crate::config::LlamaConfig;
use crate::error::{LlamaError, Result};
use crate::graph::{build_step_graph, cache_input};
use crate::kv_cache::KvCache;
use crate::weights::{LlamaWeights, WeightMode};
use rlx_gguf::GgufReader;
use rlx_ir::HostTensor;
use rlx_runtime::{CompiledGraph, Device, Session};
use std::path::Path;

/// A masked key's bias: finite, so a fully masked block never makes NaNs,
/// and small enough that `exp` of it is exactly 0 in f32.
const MASKED: f32 = -1.0e9;

/// Loading options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlamaOptions {
    /// How matrices are held and multiplied.
    pub weights: WeightMode,
    /// KV cache positions (prompt + generated tokens); at most the model's
    /// context length.
    pub context: usize,
    /// Tokens per prefill run (the prompt runs in chunks of this size, the
    /// last one padded); 1 runs the prompt token by token.
    pub prefill_chunk: usize,
}

impl Default for LlamaOptions {
    fn default() -> Self {
        LlamaOptions {
            weights: WeightMode::Quantized,
            context: 512,
            prefill_chunk: 32,
        }
    }
}

/// A llama model compiled for the CPU: one graph for single-token decode
/// steps and one for prefill chunks, each compiled once.
pub struct LlamaModel {
    config: LlamaConfig,
    weights: LlamaWeights,
    context: usize,
    decode: CompiledGraph,
    prefill: Option<(usize, CompiledGraph)>,
}

impl LlamaModel {
    /// Opens (memory-maps) a GGUF file and loads the model.
    pub fn open(path: impl AsRef<Path>, opts: LlamaOptions) -> Result<LlamaModel> {
        let r = GgufReader::open(path)?;
        LlamaModel::from_reader(&r, opts)
    }

    /// Loads the model from a parsed GGUF file.
    pub fn from_reader<D: AsRef<[u8]>>(r: &GgufReader<D>, opts: LlamaOptions) -> Result<Self> {
        let config = LlamaConfig::from_gguf(r.metadata())?;
        if opts.context == 0 || opts.context > config.context_length {
            return Err(LlamaError::BadSetting {
                name: "context",
                expected: "1 ..= the model's context_length",
                given: format!(
                    "{} (context_length {})",
                    opts.context, config.context_length
                ),
            });
        }
        if opts.prefill_chunk == 0 {
            return Err(LlamaError::BadSetting {
                name: "prefill_chunk",
                expected: ">= 1",
                given: "0".into(),
            });
        }
        let weights = LlamaWeights::from_gguf(r, &config, opts.weights)?;
        let decode = compile(&config, &weights, 1, opts.context)?;
        let prefill = match opts.prefill_chunk {
            1 => None,
            p => Some((p, compile(&config, &weights, p, opts.context)?)),
        };
        Ok(LlamaModel {
            config,
            weights,
            context: opts.context,
            decode,
            prefill,
        })
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The loaded tensors.
    pub fn weights(&self) -> &LlamaWeights {
        &self.weights
    }

    /// An empty KV cache sized for this model's context.
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(&self.config, self.context)
    }

    /// Runs `tokens` after the ones in `cache`, appends their keys / values
    /// to it and returns their logits, `tokens.len()` rows of `vocab_size`.
    ///
    /// Unknown ids and a full cache are rejected before anything runs; a
    /// runtime failure part-way keeps the chunks already run in `cache`.
    pub fn forward(&mut self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>> {
        cache.check_room(tokens.len())?;
        if let Some(&id) = tokens
            .iter()
            .find(|&&t| t as usize >= self.config.vocab_size)
        {
            return Err(LlamaError::TokenOutOfRange {
                id,
                vocab: self.config.vocab_size,
            });
        }
        let mut logits = Vec::with_capacity(tokens.len() * self.config.vocab_size);
        let mut rest = tokens;
        while !rest.is_empty() {
            let seq = match &self.prefill {
                Some((p, _)) if rest.len() > 1 => *p,
                _ => 1,
            };
            let n = rest.len().min(seq);
            logits.extend(self.step(&rest[..n], seq, cache)?);
            rest = &rest[n..];
        }
        Ok(logits)
    }

    /// One run of the `seq`-token graph on `tokens` (at most `seq`, padded).
    fn step(&mut self, tokens: &[u32], seq: usize, cache: &mut KvCache) -> Result<Vec<f32>> {
        let cfg = &self.config;
        let (dim, half, ctx, pos) = (cfg.dim, cfg.head_dim / 2, self.context, cache.len());
        let mut x = vec![0f32; seq * dim];
        for (i, &t) in tokens.iter().enumerate() {
            self.weights.embed_into(t, &mut x[i * dim..][..dim])?;
        }
        let (mut cos, mut sin) = (vec![0f32; seq * half], vec![0f32; seq * half]);
        for i in 0..seq {
            for j in 0..half {
                let freq = cfg.rope_base.powf(-2.0 * j as f64 / cfg.head_dim as f64);
                let angle = (pos + i) as f64 * freq;
                cos[i * half + j] = angle.cos() as f32;
                sin[i * half + j] = angle.sin() as f32;
            }
        }
        let width = ctx + seq;
        let mut mask = vec![MASKED; seq * width];
        for i in 0..seq {
            mask[i * width..][..pos].fill(0.0);
            mask[i * width + ctx..][..=i].fill(0.0);
        }
        let t = |v: Vec<f32>, dims: &[usize]| HostTensor::from_vec(v, dims);
        let named = [
            ("x", t(x, &[seq, dim])?),
            ("cos", t(cos, &[seq, half])?),
            ("sin", t(sin, &[seq, half])?),
            ("mask", t(mask, &[seq, width])?),
        ];
        let cache_names: Vec<(String, String)> = (0..cfg.n_layers)
            .map(|l| (cache_input("k", l), cache_input("v", l)))
            .collect();
        let mut inputs: Vec<(&str, &HostTensor)> = named.iter().map(|(n, v)| (*n, v)).collect();
        for (l, (kn, vn)) in cache_names.iter().enumerate() {
            inputs.push((kn, cache.keys(l)));
            inputs.push((vn, cache.values(l)));
        }
        let graph = match &mut self.prefill {
            Some((p, g)) if *p == seq => g,
            _ => &mut self.decode,
        };
        let outs = graph.try_run_typed(&inputs)?;
        for l in 0..cfg.n_layers {
            cache.write(l, &outs[1 + 2 * l], &outs[2 + 2 * l], tokens.len());
        }
        cache.advance(tokens.len());
        let mut logits = outs[0].to_vec::<f32>()?;
        logits.truncate(tokens.len() * cfg.vocab_size);
        Ok(logits)
    }
}

/// Builds, compiles and loads the `seq`-token step graph.
fn compile(cfg: &LlamaConfig, w: &LlamaWeights, seq: usize, ctx: usize) -> Result<CompiledGraph> {
    let step = build_step_graph(cfg, w, seq, ctx);
    let mut compiled = Session::new(Device::Cpu).try_compile(step.graph)?;
    for (name, value) in step.params {
        compiled.set_param_typed(&name, value)?;
    }
    Ok(compiled)
}
