//! # rlx-onnx — ONNX models on RLX
//!
//! Loads an `.onnx` file (protobuf decoded with prost; initializers in raw,
//! typed or external-data form), imports its graph into the RLX IR (ONNX
//! broadcasting, axis conventions, optional inputs, attribute defaults,
//! constant folding of shape subgraphs), compiles it with an RLX
//! [`rlx_runtime::Session`] on any [`Device`] and runs it. No ONNX Runtime
//! underneath.
//!
//! ```no_run
//! use rlx_onnx::{OnnxModel, Device};
//! use rlx_ir::HostTensor;
//! let mut m = OnnxModel::load("model.onnx", Device::Cpu)?;
//! let x = HostTensor::from_vec(vec![0f32; 4], &[1, 4])?;
//! let outs = m.run(&[("x", &x)])?;
//! println!("{}", m.graph_text()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every size in a file is checked against the bytes present before
//! anything is allocated: a hostile file is an [`OnnxError`], never a panic.
#![deny(missing_docs)]

pub mod compile_cache;
pub mod conformance;
mod error;
pub mod import;
mod model;
pub mod narrow;
mod onnx_model;
pub mod proto;
pub mod tensor;

pub use compile_cache::clear_compile_cache;
pub use error::{OnnxError, Result, UnsupportedNode};
pub use import::validate::{MAX_OPSET, MIN_OPSET};
pub use model::{ModelInfo, TensorInfo};
pub use onnx_model::{OnnxModel, OnnxOptions};
pub use rlx_driver::Device;
pub use rlx_runtime::Precision;
pub use tensor::{read_tensor_file, tensor_from_proto, tensor_from_proto_bytes};
