//! [`LlamaConfig`]: the hyper-parameters of a llama-family model, read from
//! GGUF metadata (`<arch>.block_count`, `<arch>.attention.head_count`, ...).

use crate::error::{LlamaError, Result};
use rlx_gguf::Metadata;
use rlx_ir::DType;

/// The element type of the KV cache (host copy and the step graphs' cache
/// params).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvCacheDtype {
    /// f32: the exact keys and values.
    #[default]
    F32,
    /// f16 (as llama.cpp's default cache): half the cache memory and
    /// traffic; attention widens each element to f32 as it reads it (the
    /// CPU backend folds the graph's cast into the products), so only the
    /// stored keys / values are rounded (about 3 decimal digits).
    F16,
}

impl KvCacheDtype {
    /// The IR dtype of the cache's elements.
    pub fn dtype(self) -> DType {
        match self {
            KvCacheDtype::F32 => DType::F32,
            KvCacheDtype::F16 => DType::F16,
        }
    }
}

/// Architectures whose GGUF layout is llama's (same tensor names and math).
const LLAMA_LIKE: &[&str] = &["llama", "mistral"];

/// The shape and constants of a llama-family transformer.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    /// `general.architecture` (`llama`, `mistral`).
    pub architecture: String,
    /// Transformer blocks.
    pub n_layers: usize,
    /// Model width (embedding length).
    pub dim: usize,
    /// Hidden width of the SwiGLU feed-forward.
    pub ffn_dim: usize,
    /// Query heads.
    pub n_heads: usize,
    /// Key / value heads (grouped-query attention when fewer than `n_heads`).
    pub n_kv_heads: usize,
    /// Width of one head (`dim / n_heads`).
    pub head_dim: usize,
    /// Vocabulary size (rows of `token_embd.weight`).
    pub vocab_size: usize,
    /// Trained context length.
    pub context_length: usize,
    /// RMSNorm epsilon.
    pub rms_eps: f64,
    /// RoPE base frequency.
    pub rope_base: f64,
}

impl LlamaConfig {
    /// Reads the config from GGUF metadata; a missing key, a value of
    /// another type or an inconsistent value is an error naming the key.
    ///
    /// `vocab_size` comes from `<arch>.vocab_size` or, when absent, from the
    /// length of `tokenizer.ggml.tokens`.
    pub fn from_gguf(meta: &Metadata) -> Result<LlamaConfig> {
        let arch = meta.get_str("general.architecture")?.to_string();
        if !LLAMA_LIKE.contains(&arch.as_str()) {
            return Err(bad("general.architecture", &arch, "one of llama, mistral"));
        }
        let key = |k: &str| format!("{arch}.{k}");
        let count = |k: &str| -> Result<usize> {
            let k = key(k);
            let v = meta.get_u64(&k)?;
            if v == 0 || v > u32::MAX as u64 {
                return Err(bad(&k, v, "a count in 1..=2^32-1"));
            }
            Ok(v as usize)
        };
        let n_layers = count("block_count")?;
        let dim = count("embedding_length")?;
        let ffn_dim = count("feed_forward_length")?;
        let n_heads = count("attention.head_count")?;
        let n_kv_heads = if meta.contains_key(&key("attention.head_count_kv")) {
            count("attention.head_count_kv")?
        } else {
            n_heads
        };
        let context_length = count("context_length")?;
        if dim % n_heads != 0 {
            return Err(bad(
                &key("attention.head_count"),
                n_heads,
                &format!("a divisor of the embedding length {dim}"),
            ));
        }
        if n_heads % n_kv_heads != 0 {
            return Err(bad(
                &key("attention.head_count_kv"),
                n_kv_heads,
                &format!("a divisor of the head count {n_heads}"),
            ));
        }
        let head_dim = dim / n_heads;
        if head_dim % 2 != 0 {
            return Err(bad(
                &key("attention.head_count"),
                n_heads,
                "a head count giving an even head width for RoPE",
            ));
        }
        if meta.contains_key(&key("rope.dimension_count")) {
            let rot = meta.get_u64(&key("rope.dimension_count"))?;
            if rot as usize != head_dim {
                return Err(bad(
                    &key("rope.dimension_count"),
                    rot,
                    &format!("the head width {head_dim} (partial RoPE is not supported)"),
                ));
            }
        }
        let rms_eps = meta.get_f64(&key("attention.layer_norm_rms_epsilon"))?;
        if !(rms_eps.is_finite() && rms_eps > 0.0) {
            return Err(bad(
                &key("attention.layer_norm_rms_epsilon"),
                rms_eps,
                "a positive number",
            ));
        }
        let rope_base = if meta.contains_key(&key("rope.freq_base")) {
            meta.get_f64(&key("rope.freq_base"))?
        } else {
            10_000.0
        };
        if !(rope_base.is_finite() && rope_base > 1.0) {
            return Err(bad(&key("rope.freq_base"), rope_base, "a number > 1"));
        }
        let vocab_size = if meta.contains_key(&key("vocab_size")) {
            count("vocab_size")?
        } else {
            meta.get_array("tokenizer.ggml.tokens")?.len()
        };
        Ok(LlamaConfig {
            architecture: arch,
            n_layers,
            dim,
            ffn_dim,
            n_heads,
            n_kv_heads,
            head_dim,
            vocab_size,
            context_length,
            rms_eps,
            rope_base,
        })
    }

    /// Width of the key / value projections (`n_kv_heads * head_dim`).
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }
}

fn bad(key: &str, given: impl std::fmt::Display, expected: &str) -> LlamaError {
    LlamaError::BadMetadata {
        key: key.to_string(),
        expected: expected.to_string(),
        given: given.to_string(),
    }
}
