//! Post-training quantization: activations per tensor (asymmetric, range
//! from calibration images), weights per output channel (symmetric,
//! `[-127, 127]`), biases int32, requantization multipliers as TFLite's
//! `QuantizeMultiplier`.

use crate::float_model::{FloatLayer, FloatModel};
use crate::math::{quantize_multiplier, softmax_params};
use crate::model::{QLayer, QWeights, QuantizedModel, TensorQuant};
use crate::QuantError;

/// Worst-case products per output the kernels accept (`255 * 128 * depth <= 2^30`).
pub const MAX_DEPTH: usize = (1 << 30) / (255 * 128);

/// Affine int8 parameters covering `[lo, hi]` (widened to include 0, as
/// TFLite's converter does, so real 0 is exact).
pub fn tensor_quant(lo: f32, hi: f32) -> TensorQuant {
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let scale = if hi > lo {
        (hi - lo) / 255.0
    } else {
        1.0 / 255.0
    };
    let zero_point = (-128.0 - lo / scale).round().clamp(-128.0, 127.0) as i32;
    TensorQuant { scale, zero_point }
}

/// Running min / max of every layer's output over the calibration images.
fn calibrate(
    model: &FloatModel,
    images: &[Vec<f32>],
) -> Result<(TensorQuant, Vec<(f32, f32)>), QuantError> {
    let len: usize = model.input_shape.iter().product();
    if images.is_empty() {
        return Err(QuantError::Calibration("no calibration images".into()));
    }
    let mut input = (f32::INFINITY, f32::NEG_INFINITY);
    let mut ranges = vec![(f32::INFINITY, f32::NEG_INFINITY); model.layers.len()];
    for (n, image) in images.iter().enumerate() {
        if image.len() != len {
            return Err(QuantError::Calibration(format!(
                "image {n} has {} values, the model takes {len}",
                image.len()
            )));
        }
        for &v in image {
            input = (input.0.min(v), input.1.max(v));
        }
        for (r, out) in ranges.iter_mut().zip(model.forward_all(image)) {
            for v in out {
                *r = (r.0.min(v), r.1.max(v));
            }
        }
    }
    Ok((tensor_quant(input.0, input.1), ranges))
}

/// Quantizes one conv / dense layer's weights (`channels` rows of
/// `per_channel` values, strided as the layout needs).
#[allow(clippy::too_many_arguments)]
fn weights(
    layer: usize,
    values: &[f32],
    bias: &[f32],
    channel_of: impl Fn(usize) -> usize,
    input: TensorQuant,
    output: TensorQuant,
    relu: bool,
    depth: usize,
) -> Result<QWeights, QuantError> {
    if depth > MAX_DEPTH {
        return Err(QuantError::AccumulatorOverflow { layer, depth });
    }
    let channels = bias.len();
    let mut max_abs = vec![0f32; channels];
    for (i, &w) in values.iter().enumerate() {
        let c = channel_of(i);
        max_abs[c] = max_abs[c].max(w.abs());
    }
    let weight_scales: Vec<f32> = max_abs
        .iter()
        .map(|&m| if m > 0.0 { m / 127.0 } else { 1.0 })
        .collect();
    let q: Vec<i8> = values
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            (w / weight_scales[channel_of(i)])
                .round()
                .clamp(-127.0, 127.0) as i8
        })
        .collect();
    let mut qbias = Vec::with_capacity(channels);
    let (mut multiplier, mut shift) = (Vec::new(), Vec::new());
    for c in 0..channels {
        let acc_scale = input.scale as f64 * weight_scales[c] as f64;
        let b = (bias[c] as f64 / acc_scale).round();
        if b.abs() > (1u64 << 30) as f64 {
            return Err(QuantError::BiasOverflow {
                layer,
                channel: c,
                bias: bias[c],
            });
        }
        qbias.push(b as i32);
        let (m, s) = quantize_multiplier(acc_scale / output.scale as f64);
        multiplier.push(m);
        shift.push(s);
    }
    let activation = if relu {
        (output.zero_point.max(-128) as i8, 127)
    } else {
        (-128, 127)
    };
    Ok(QWeights {
        weights: q,
        bias: qbias,
        weight_scales,
        multiplier,
        shift,
        input,
        output,
        activation,
    })
}

/// Quantizes `model` with activation ranges measured on `calibration`
/// (float NHWC images, e.g. a sample of the training set).
pub fn quantize(
    model: &FloatModel,
    calibration: &[Vec<f32>],
) -> Result<QuantizedModel, QuantError> {
    let (input_quant, ranges) = calibrate(model, calibration)?;
    let mut layers = Vec::with_capacity(model.layers.len());
    let mut current = input_quant;
    for (i, (layer, &(lo, hi))) in model.layers.iter().zip(&ranges).enumerate() {
        let q = match layer {
            FloatLayer::Conv2d {
                geometry: g,
                weights: w,
                bias,
                relu,
            } => {
                let per = g.k_h * g.k_w * g.in_c;
                QLayer::Conv2d {
                    geometry: *g,
                    params: weights(
                        i,
                        w,
                        bias,
                        |j| j / per,
                        current,
                        tensor_quant(lo, hi),
                        *relu,
                        per,
                    )?,
                }
            }
            FloatLayer::DepthwiseConv2d {
                geometry: g,
                depth_multiplier,
                weights: w,
                bias,
                relu,
            } => QLayer::DepthwiseConv2d {
                geometry: *g,
                depth_multiplier: *depth_multiplier,
                params: weights(
                    i,
                    w,
                    bias,
                    |j| j % g.out_c,
                    current,
                    tensor_quant(lo, hi),
                    *relu,
                    g.k_h * g.k_w,
                )?,
            },
            FloatLayer::Dense {
                depth,
                units,
                weights: w,
                bias,
                relu,
            } => QLayer::Dense {
                depth: *depth,
                units: *units,
                params: weights(
                    i,
                    w,
                    bias,
                    |j| j / depth,
                    current,
                    tensor_quant(lo, hi),
                    *relu,
                    *depth,
                )?,
            },
            FloatLayer::MaxPool { geometry } => QLayer::MaxPool {
                geometry: *geometry,
                quant: current,
            },
            FloatLayer::AvgPool { geometry } => QLayer::AvgPool {
                geometry: *geometry,
                quant: current,
            },
            FloatLayer::Relu { len } => QLayer::Relu {
                len: *len,
                quant: current,
            },
            FloatLayer::Softmax { len, classes } => {
                let p = softmax_params(1.0, current.scale as f64);
                QLayer::Softmax {
                    len: *len,
                    classes: *classes,
                    input: current,
                    multiplier: p.input_multiplier,
                    left_shift: p.input_left_shift,
                    diff_min: p.diff_min,
                }
            }
        };
        current = q.output_quant();
        layers.push(q);
    }
    Ok(QuantizedModel {
        name: model.name.clone(),
        input_shape: model.input_shape,
        input: input_quant,
        layers,
        argmax: model.argmax,
    })
}
