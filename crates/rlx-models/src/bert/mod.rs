//! BERT encoders (HF `BertModel` in eval mode) with sentence-transformers
//! mean pooling, e.g. all-MiniLM-L6-v2.
//!
//! [`encoder_graph`] builds the graph for one static batch and sequence
//! length; [`BertEncoder`] compiles it per shape, fills its params from
//! `model.safetensors` (memory-mapped, through [`rlx_runtime::WeightLoader`])
//! and runs a [`TokenBatch`].

mod config;
mod encoder;
mod graph;

pub use config::BertConfig;
pub use encoder::{BertEncoder, BertOutput, TokenBatch};
pub use graph::{encoder_graph, graph_param, load_params, EncoderGraph};
