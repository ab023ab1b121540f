//! A quantized network as a list of layers over borrowed (flash) data, run
//! one image at a time through two caller-owned scratch buffers.
//!
//! `rlx-quant-int8` generates a `model_weights.rs` holding a
//! `pub static LAYERS: [Layer<'static>; N]` for a firmware to pass to
//! [`run_layers`].

use crate::activation::relu;
use crate::conv::{conv2d, depthwise_conv2d, Conv2dGeometry};
use crate::dense::dense;
use crate::error::KernelError;
use crate::pool::{avgpool, maxpool, PoolGeometry};
use crate::qparams::{ChannelQuant, QParams};
use crate::softmax::{softmax, SoftmaxParams};
use core::fmt;

/// Per-channel requantized weights of a conv / dense layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights<'a> {
    /// int8 weights in the kernel's layout.
    pub weights: &'a [i8],
    /// int32 biases, one per output channel.
    pub bias: &'a [i32],
    /// Q0.31 multipliers, one per output channel.
    pub multiplier: &'a [i32],
    /// Shifts, one per output channel.
    pub shift: &'a [i32],
    /// Zero points and output clamp.
    pub q: QParams,
}

impl Weights<'_> {
    fn channel_quant(&self) -> ChannelQuant<'_> {
        ChannelQuant {
            multiplier: self.multiplier,
            shift: self.shift,
        }
    }
}

/// One layer of an int8 network (NHWC activations, one image).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layer<'a> {
    /// [`conv2d`]: weights `[out_c][k_h][k_w][in_c]`.
    Conv2d {
        /// Window geometry.
        geometry: Conv2dGeometry,
        /// Weights and requantization.
        params: Weights<'a>,
    },
    /// [`depthwise_conv2d`]: weights `[k_h][k_w][out_c]`.
    DepthwiseConv2d {
        /// Window geometry.
        geometry: Conv2dGeometry,
        /// Output channels per input channel.
        depth_multiplier: usize,
        /// Weights and requantization.
        params: Weights<'a>,
    },
    /// [`dense`]: weights `[units][depth]` over the flattened (NHWC) input.
    Dense {
        /// Inputs per output.
        depth: usize,
        /// Outputs.
        units: usize,
        /// Weights and requantization.
        params: Weights<'a>,
    },
    /// [`maxpool`].
    MaxPool {
        /// Window geometry.
        geometry: PoolGeometry,
        /// Output clamp.
        activation: (i8, i8),
    },
    /// [`avgpool`].
    AvgPool {
        /// Window geometry.
        geometry: PoolGeometry,
        /// Output clamp.
        activation: (i8, i8),
    },
    /// [`relu`] over `len` values.
    Relu {
        /// Values.
        len: usize,
        /// Zero point of the tensor.
        zero_point: i8,
    },
    /// [`softmax`] over rows of `classes` values, `len` values in all.
    Softmax {
        /// Values.
        len: usize,
        /// Row length.
        classes: usize,
        /// Input scaling.
        params: SoftmaxParams,
    },
}

impl Layer<'_> {
    /// Input elements the layer reads.
    pub fn input_len(&self) -> usize {
        match self {
            Layer::Conv2d { geometry, .. }
            | Layer::DepthwiseConv2d { geometry, .. }
            | Layer::MaxPool { geometry, .. }
            | Layer::AvgPool { geometry, .. } => geometry.input_len(),
            Layer::Dense { depth, .. } => *depth,
            Layer::Relu { len, .. } | Layer::Softmax { len, .. } => *len,
        }
    }

    /// Output elements the layer writes.
    pub fn output_len(&self) -> usize {
        match self {
            Layer::Conv2d { geometry, .. }
            | Layer::DepthwiseConv2d { geometry, .. }
            | Layer::MaxPool { geometry, .. }
            | Layer::AvgPool { geometry, .. } => geometry.output_len(),
            Layer::Dense { units, .. } => *units,
            Layer::Relu { len, .. } | Layer::Softmax { len, .. } => *len,
        }
    }

    /// Runs the layer on one image.
    pub fn run(&self, input: &[i8], output: &mut [i8]) -> Result<(), KernelError> {
        match self {
            Layer::Conv2d { geometry, params } => conv2d(
                input,
                params.weights,
                params.bias,
                1,
                geometry,
                &params.q,
                &params.channel_quant(),
                output,
            ),
            Layer::DepthwiseConv2d {
                geometry,
                depth_multiplier,
                params,
            } => depthwise_conv2d(
                input,
                params.weights,
                params.bias,
                1,
                geometry,
                *depth_multiplier,
                &params.q,
                &params.channel_quant(),
                output,
            ),
            Layer::Dense {
                depth,
                units,
                params,
            } => dense(
                input,
                params.weights,
                params.bias,
                1,
                *depth,
                *units,
                &params.q,
                &params.channel_quant(),
                output,
            ),
            Layer::MaxPool {
                geometry,
                activation,
            } => maxpool(input, 1, geometry, activation.0, activation.1, output),
            Layer::AvgPool {
                geometry,
                activation,
            } => avgpool(input, 1, geometry, activation.0, activation.1, output),
            Layer::Relu { len, zero_point } => {
                crate::error::check_len("input", *len, input.len())?;
                crate::error::check_len("output", *len, output.len())?;
                output.copy_from_slice(input);
                relu(output, *zero_point);
                Ok(())
            }
            Layer::Softmax {
                len,
                classes,
                params,
            } => {
                crate::error::check_len("input", *len, input.len())?;
                softmax(input, *classes, params, output)
            }
        }
    }
}

/// Why [`run_layers`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The layer list is empty.
    NoLayers,
    /// A scratch buffer is smaller than the layer's output.
    Scratch {
        /// Layer index.
        layer: usize,
        /// Elements needed.
        needed: usize,
    },
    /// A layer's kernel refused its arguments.
    Kernel {
        /// Layer index.
        layer: usize,
        /// The kernel's error.
        error: KernelError,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::NoLayers => write!(f, "the model has no layers"),
            ModelError::Scratch { layer, needed } => {
                write!(f, "layer {layer}: scratch buffers need {needed} elements")
            }
            ModelError::Kernel { layer, error } => write!(f, "layer {layer}: {error}"),
        }
    }
}

impl core::error::Error for ModelError {}

/// The largest layer output: the length each scratch buffer needs.
pub fn scratch_len(layers: &[Layer<'_>]) -> usize {
    layers.iter().map(Layer::output_len).max().unwrap_or(0)
}

/// Runs `layers` on one image; activations alternate between `a` and `b`
/// (each at least [`scratch_len`] long). Returns the last layer's output.
pub fn run_layers<'b>(
    layers: &[Layer<'_>],
    input: &[i8],
    a: &'b mut [i8],
    b: &'b mut [i8],
) -> Result<&'b [i8], ModelError> {
    if layers.is_empty() {
        return Err(ModelError::NoLayers);
    }
    let (mut src, mut dst) = (a, b);
    let mut len = 0;
    for (i, layer) in layers.iter().enumerate() {
        let out_len = layer.output_len();
        if dst.len() < out_len || (i > 0 && src.len() < len) {
            return Err(ModelError::Scratch {
                layer: i,
                needed: out_len.max(len),
            });
        }
        let from: &[i8] = if i == 0 { input } else { &src[..len] };
        layer
            .run(from, &mut dst[..out_len])
            .map_err(|error| ModelError::Kernel { layer: i, error })?;
        core::mem::swap(&mut src, &mut dst);
        len = out_len;
    }
    Ok(&src[..len])
}
