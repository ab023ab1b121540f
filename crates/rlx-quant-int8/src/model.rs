//! The quantized model: a layer list with int8 weights, int32 biases,
//! per-channel multipliers / shifts, zero points and shapes: what the
//! Cortex-M generator and an RTL generator consume.

use rlx_cortexm::{Conv2dGeometry, SoftmaxParams};
use serde::{Deserialize, Serialize};

/// Window geometry over one NHWC image (serializable twin of
/// [`rlx_cortexm::Conv2dGeometry`]); `pads` is `[top, bottom, left, right]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Input channels.
    pub in_c: usize,
    /// Output channels.
    pub out_c: usize,
    /// Kernel height.
    pub k_h: usize,
    /// Kernel width.
    pub k_w: usize,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Padding `[top, bottom, left, right]`.
    pub pads: [usize; 4],
}

impl Geometry {
    /// The kernels' geometry.
    pub fn to_cortexm(&self) -> Conv2dGeometry {
        Conv2dGeometry {
            in_h: self.in_h,
            in_w: self.in_w,
            in_c: self.in_c,
            out_c: self.out_c,
            k_h: self.k_h,
            k_w: self.k_w,
            stride_h: self.stride_h,
            stride_w: self.stride_w,
            pad_top: self.pads[0],
            pad_bottom: self.pads[1],
            pad_left: self.pads[2],
            pad_right: self.pads[3],
        }
    }

    /// Output height.
    pub fn out_h(&self) -> usize {
        (self.in_h + self.pads[0] + self.pads[1] - self.k_h) / self.stride_h + 1
    }

    /// Output width.
    pub fn out_w(&self) -> usize {
        (self.in_w + self.pads[2] + self.pads[3] - self.k_w) / self.stride_w + 1
    }

    /// Input elements.
    pub fn input_len(&self) -> usize {
        self.in_h * self.in_w * self.in_c
    }

    /// Output elements.
    pub fn output_len(&self) -> usize {
        self.out_h() * self.out_w() * self.out_c
    }
}

/// Affine int8 quantization of a tensor: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorQuant {
    /// Step between consecutive int8 values.
    pub scale: f32,
    /// The int8 value standing for real 0.
    pub zero_point: i32,
}

impl TensorQuant {
    /// `clamp(round(v / scale) + zero_point)` (round half away from zero).
    pub fn quantize(&self, v: f32) -> i8 {
        ((v / self.scale).round() as i32 + self.zero_point).clamp(-128, 127) as i8
    }

    /// `scale * (q - zero_point)`.
    pub fn dequantize(&self, q: i8) -> f32 {
        self.scale * (q as i32 - self.zero_point) as f32
    }
}

/// Per-output-channel int8 weights of a conv / dense layer with their
/// requantization (symmetric: weight zero point 0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QWeights {
    /// int8 weights (layout given by the layer).
    pub weights: Vec<i8>,
    /// int32 biases in units of `input_scale * weight_scale[c]`.
    pub bias: Vec<i32>,
    /// Per-channel weight scales.
    pub weight_scales: Vec<f32>,
    /// Q0.31 multipliers of `input_scale * weight_scale[c] / output_scale`.
    pub multiplier: Vec<i32>,
    /// Their power-of-two shifts.
    pub shift: Vec<i32>,
    /// Input quantization.
    pub input: TensorQuant,
    /// Output quantization.
    pub output: TensorQuant,
    /// Output clamp `(min, max)` (a fused ReLU raises the min to the output zero point).
    pub activation: (i8, i8),
}

/// One int8 layer (NHWC activations, one image at a time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum QLayer {
    /// Convolution; weights `[out_c][k_h][k_w][in_c]`.
    Conv2d {
        /// Window geometry.
        geometry: Geometry,
        /// Weights and requantization.
        params: QWeights,
    },
    /// Depthwise convolution; weights `[k_h][k_w][out_c]`.
    DepthwiseConv2d {
        /// Window geometry.
        geometry: Geometry,
        /// Output channels per input channel.
        depth_multiplier: usize,
        /// Weights and requantization.
        params: QWeights,
    },
    /// Fully connected over the flattened NHWC input; weights `[units][depth]`.
    Dense {
        /// Inputs per output.
        depth: usize,
        /// Outputs.
        units: usize,
        /// Weights and requantization.
        params: QWeights,
    },
    /// Max pooling (keeps the quantization).
    MaxPool {
        /// Window geometry.
        geometry: Geometry,
        /// The tensor's quantization.
        quant: TensorQuant,
    },
    /// Average pooling (keeps the quantization).
    AvgPool {
        /// Window geometry.
        geometry: Geometry,
        /// The tensor's quantization.
        quant: TensorQuant,
    },
    /// ReLU not fused into a conv / dense.
    Relu {
        /// Values.
        len: usize,
        /// The tensor's quantization.
        quant: TensorQuant,
    },
    /// Softmax over rows of `classes` (output scale 1/256, zero point -128).
    Softmax {
        /// Values.
        len: usize,
        /// Row length.
        classes: usize,
        /// Input quantization.
        input: TensorQuant,
        /// Input multiplier / left shift / `diff_min`.
        multiplier: i32,
        /// Left shift of the multiplier.
        left_shift: i32,
        /// Smallest difference to the row max that counts.
        diff_min: i32,
    },
}

impl QLayer {
    /// Output elements per image.
    pub fn output_len(&self) -> usize {
        match self {
            QLayer::Conv2d { geometry, .. }
            | QLayer::DepthwiseConv2d { geometry, .. }
            | QLayer::MaxPool { geometry, .. }
            | QLayer::AvgPool { geometry, .. } => geometry.output_len(),
            QLayer::Dense { units, .. } => *units,
            QLayer::Relu { len, .. } | QLayer::Softmax { len, .. } => *len,
        }
    }

    /// Quantization of the layer's output.
    pub fn output_quant(&self) -> TensorQuant {
        match self {
            QLayer::Conv2d { params, .. }
            | QLayer::DepthwiseConv2d { params, .. }
            | QLayer::Dense { params, .. } => params.output,
            QLayer::MaxPool { quant, .. }
            | QLayer::AvgPool { quant, .. }
            | QLayer::Relu { quant, .. } => *quant,
            QLayer::Softmax { .. } => TensorQuant {
                scale: 1.0 / 256.0,
                zero_point: -128,
            },
        }
    }

    /// The kernels' softmax parameters (softmax layers only).
    pub fn softmax_params(&self) -> Option<SoftmaxParams> {
        match self {
            QLayer::Softmax {
                multiplier,
                left_shift,
                diff_min,
                ..
            } => Some(SoftmaxParams {
                input_multiplier: *multiplier,
                input_left_shift: *left_shift,
                diff_min: *diff_min,
            }),
            _ => None,
        }
    }
}

/// A quantized network: one NHWC int8 image in, the last layer's int8
/// values out (logits for a classifier; `argmax` marks one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantizedModel {
    /// Name (used in generated code).
    pub name: String,
    /// Input `[height, width, channels]`.
    pub input_shape: [usize; 3],
    /// Input quantization.
    pub input: TensorQuant,
    /// The layers in order.
    pub layers: Vec<QLayer>,
    /// The graph ended in an arg-max over the last layer's output.
    pub argmax: bool,
}

impl QuantizedModel {
    /// Input elements per image.
    pub fn input_len(&self) -> usize {
        self.input_shape.iter().product()
    }

    /// Output elements per image.
    pub fn output_len(&self) -> usize {
        self.layers
            .last()
            .map_or(self.input_len(), QLayer::output_len)
    }

    /// Quantizes one float NHWC image.
    pub fn quantize_input(&self, image: &[f32]) -> Vec<i8> {
        image.iter().map(|&v| self.input.quantize(v)).collect()
    }

    /// The model as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a QuantizedModel always serializes")
    }

    /// Parses [`QuantizedModel::to_json`]'s output.
    pub fn from_json(text: &str) -> Result<Self, crate::QuantError> {
        serde_json::from_str(text).map_err(|e| crate::QuantError::Json(e.to_string()))
    }
}
