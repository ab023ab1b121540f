//! # rlx-llama — llama-family LLMs from GGUF files
//!
//! Loads a llama / mistral GGUF model (e.g. SmolLM2-135M-Instruct Q4_1),
//! builds its transformer as an RLX graph over the quantized weights
//! (`Op::DequantMatMul`: RMSNorm, RoPE, grouped-query attention, SwiGLU,
//! tied embeddings), and generates text:
//!
//! - [`LlamaConfig::from_gguf`]: hyper-parameters from the metadata.
//! - [`LlamaModel`]: the compiled decode / prefill step graphs and
//!   [`LlamaModel::forward`] over a [`KvCache`].
//! - [`Tokenizer`]: GPT-2 style byte-level BPE from `tokenizer.ggml.tokens`
//!   / `tokenizer.ggml.merges`.
//! - [`ChatTemplate`]: the file's Jinja chat template (`minijinja`).
//! - [`Sampler`]: greedy, temperature, top-k and top-p sampling with a
//!   seeded, numpy-compatible RNG.
//! - [`generate`](fn@generate): prompt in, tokens and timings out.
//!
//! Errors are [`LlamaError`]s that name the metadata key or tensor at fault.
#![deny(missing_docs)]

pub mod chat;
pub mod config;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod generate;
pub mod graph;
pub mod kv_cache;
pub mod model;
pub mod sampler;
pub mod tokenizer;
pub mod weights;

pub use chat::{ChatMessage, ChatTemplate};
pub use config::{KvCacheDtype, LlamaConfig};
pub use error::{LlamaError, Result};
pub use generate::{generate, GenerateOptions, Generation};
pub use kv_cache::KvCache;
pub use model::{LlamaModel, LlamaOptions};
pub use sampler::{Sampler, SamplerConfig};
pub use tokenizer::Tokenizer;
pub use weights::{LlamaWeights, WeightMode};
