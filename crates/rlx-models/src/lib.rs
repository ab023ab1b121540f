//! # rlx-models — model definitions on the public graph API
//!
//! [`bert`] builds a BERT encoder (embeddings, post-norm self-attention
//! layers, mean pooling and L2 normalisation as sentence-transformers does)
//! for a static batch and sequence length, fills its params from a
//! safetensors file through [`rlx_runtime::WeightLoader`], and runs it on
//! any RLX device. With the `tokenizer` feature (default),
//! [`tokenize::WordPieceTokenizer`] turns sentences into the id / mask
//! tensors it takes, from the model's own `tokenizer.json`.
//!
//! ```no_run
//! use rlx_models::bert::BertEncoder;
//! use rlx_models::tokenize::WordPieceTokenizer;
//! let dir = std::path::Path::new("all-MiniLM-L6-v2");
//! let tok = WordPieceTokenizer::from_dir(dir).unwrap();
//! let mut enc = BertEncoder::from_dir(dir, rlx_runtime::Device::Cpu).unwrap();
//! let batch = tok.encode(&["A sentence.", "Another one."]).unwrap();
//! let emb = enc.embed(&batch).unwrap(); // [2, 384], unit rows
//! ```
#![deny(missing_docs)]

pub mod bert;
mod error;
#[cfg(feature = "tokenizer")]
pub mod tokenize;

pub use error::ModelError;
