//! # rlx-gguf — GGUF files for RLX
//!
//! Reads and writes [GGUF](https://github.com/ggml-org/ggml/blob/master/docs/gguf.md)
//! v1, v2 and v3 files (the llama.cpp model format) and converts their tensors
//! to and from `f32`:
//!
//! - [`GgufReader`]: a parsed file over a memory map ([`GgufReader::open`]),
//!   a `Vec<u8>` or a byte slice: header, every metadata value type
//!   ([`Value`], including nested [`Array`]s), tensor infos ([`TensorInfo`]),
//!   `general.alignment`, and typed tensor access ([`rlx_ir::HostTensor`]).
//!   Hostile input is an error naming the offset / key / tensor / type id,
//!   never a panic: counts and lengths are checked against the bytes left
//!   before anything is allocated.
//! - [`GgufSplit`]: a model split into `name-00001-of-0000N.gguf` shards.
//! - [`GgufWriter`]: writes files byte-compatible with gguf-py's writer,
//!   whole or split.
//! - [`codecs`]: dequantize / quantize every ggml type this crate supports
//!   (see the table there), bit-identical to ggml's reference code.
//! - [`QuantScheme`]: the IR-level name of a block format.
//!
//! ```
//! use rlx_gguf::{codecs, GgmlType, GgufReader, GgufWriter, Value};
//! let mut w = GgufWriter::new();
//! w.add_metadata("general.architecture", "llama").unwrap();
//! w.add_metadata("llama.context_length", Value::U32(2048)).unwrap();
//! let x: Vec<f32> = (0..512).map(|i| (i as f32 * 0.37).sin()).collect();
//! w.add_quantized("tok_embd.weight", &[2, 256], &x, GgmlType::Q6_K).unwrap();
//! let file = w.to_bytes().unwrap();
//!
//! let r = GgufReader::new(&file[..]).unwrap();
//! assert_eq!(r.metadata().get_u64("llama.context_length").unwrap(), 2048);
//! let t = r.dequantize("tok_embd.weight").unwrap();
//! assert_eq!(t.dims(), &[2, 256]);
//! let y = t.to_vec::<f32>().unwrap();
//! assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.04));
//! ```
#![deny(missing_docs)]

pub mod codecs;
mod error;
mod parse;
mod reader;
mod split;
mod types;
mod value;
mod writer;

pub use error::{GgufError, Result};
pub use parse::{
    GgufContent, TensorInfo, DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VERSION, KEY_ALIGNMENT,
    MAX_ARRAY_DEPTH, MAX_DIMS,
};
pub use reader::{GgufFile, GgufReader};
/// The IR's quantization scheme, re-exported from [`rlx_ir::quant`] where it lives.
pub use rlx_ir::quant::QuantScheme;
pub use split::{
    parse_shard_path, shard_path, GgufSplit, KEY_SPLIT_COUNT, KEY_SPLIT_NO, KEY_SPLIT_TENSORS_COUNT,
};
pub use types::GgmlType;
pub use value::{Array, Metadata, Value, ValueType};
pub use writer::GgufWriter;
