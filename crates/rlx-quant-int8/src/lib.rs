//! Post-training INT8 quantization for RLX's edge targets, with TFLite /
//! CMSIS-NN semantics, and the integer reference model both the Cortex-M
//! kernels (`rlx-cortexm`) and an RTL export must match bit for bit.
//!
//! Pipeline: [`float_model_from_graph`] reads a trained graph (NCHW convs,
//! pools, flatten, matmul, bias adds, ReLU, softmax, arg-max) and its param
//! values into a [`FloatModel`] over NHWC images; [`quantize`] calibrates
//! per-tensor activation ranges on sample images, quantizes weights per
//! output channel (symmetric) and biases to int32, and computes each
//! channel's multiplier / shift ([`math::quantize_multiplier`]); the result
//! is a [`QuantizedModel`]: a layer list with int8 weights, int32 biases,
//! multipliers, shifts, zero points and shapes, serializable to JSON.
//! [`QuantizedModel::run_reference`] is the integer reference,
//! [`QuantizedModel::run_cortexm`] runs the kernels on the host, and
//! [`emit_model_weights`] writes the firmware's `model_weights.rs`.
#![deny(missing_docs)]

mod codegen;
mod cortexm;
mod error;
mod float_model;
mod graph_import;
pub mod math;
mod model;
mod quantize;
pub mod reference;
mod tinyconv;

pub use codegen::emit_model_weights;
pub use cortexm::cortexm_layer;
pub use error::QuantError;
pub use float_model::{FloatLayer, FloatModel};
pub use graph_import::float_model_from_graph;
pub use model::{Geometry, QLayer, QWeights, QuantizedModel, TensorQuant};
pub use quantize::{quantize, tensor_quant, MAX_DEPTH};
pub use tinyconv::{tinyconv_mnist_from_cortexm, tinyconv_test_set, TinyconvTestSet};
