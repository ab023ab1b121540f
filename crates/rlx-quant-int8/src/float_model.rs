//! The float network a graph describes, as a layer list over NHWC images:
//! what the quantizer calibrates (its forward pass records each layer's
//! output range) and then quantizes.

use crate::model::Geometry;

/// One float layer (NHWC activations, one image).
#[derive(Clone, Debug, PartialEq)]
pub enum FloatLayer {
    /// Convolution; weights `[out_c][k_h][k_w][in_c]`.
    Conv2d {
        /// Window geometry.
        geometry: Geometry,
        /// Weights.
        weights: Vec<f32>,
        /// Biases (`out_c`).
        bias: Vec<f32>,
        /// A ReLU follows.
        relu: bool,
    },
    /// Depthwise convolution; weights `[k_h][k_w][out_c]`.
    DepthwiseConv2d {
        /// Window geometry.
        geometry: Geometry,
        /// Output channels per input channel.
        depth_multiplier: usize,
        /// Weights.
        weights: Vec<f32>,
        /// Biases (`out_c`).
        bias: Vec<f32>,
        /// A ReLU follows.
        relu: bool,
    },
    /// Fully connected; weights `[units][depth]` over the NHWC-flattened input.
    Dense {
        /// Inputs per output.
        depth: usize,
        /// Outputs.
        units: usize,
        /// Weights.
        weights: Vec<f32>,
        /// Biases (`units`).
        bias: Vec<f32>,
        /// A ReLU follows.
        relu: bool,
    },
    /// Max pooling.
    MaxPool {
        /// Window geometry.
        geometry: Geometry,
    },
    /// Average pooling over the valid cells.
    AvgPool {
        /// Window geometry.
        geometry: Geometry,
    },
    /// ReLU.
    Relu {
        /// Values.
        len: usize,
    },
    /// Softmax over rows of `classes`.
    Softmax {
        /// Values.
        len: usize,
        /// Row length.
        classes: usize,
    },
}

/// A float network over NHWC images.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatModel {
    /// Name.
    pub name: String,
    /// Input `[height, width, channels]`.
    pub input_shape: [usize; 3],
    /// Layers in order.
    pub layers: Vec<FloatLayer>,
    /// The graph ended in an arg-max.
    pub argmax: bool,
}

/// Calls `f(oy, ox, taps)` per output position, `taps` the valid
/// `(ky, kx, iy, ix)` of its window.
pub(crate) fn for_each_window(
    g: &Geometry,
    mut f: impl FnMut(usize, usize, &[(usize, usize, usize, usize)]),
) {
    let mut taps = Vec::with_capacity(g.k_h * g.k_w);
    for oy in 0..g.out_h() {
        for ox in 0..g.out_w() {
            taps.clear();
            for ky in 0..g.k_h {
                for kx in 0..g.k_w {
                    let iy = (oy * g.stride_h + ky) as isize - g.pads[0] as isize;
                    let ix = (ox * g.stride_w + kx) as isize - g.pads[2] as isize;
                    if iy >= 0 && ix >= 0 && (iy as usize) < g.in_h && (ix as usize) < g.in_w {
                        taps.push((ky, kx, iy as usize, ix as usize));
                    }
                }
            }
            f(oy, ox, &taps);
        }
    }
}

impl FloatLayer {
    /// Runs the layer on one image (f64 sums).
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        let relu = |v: f64, on: bool| if on { v.max(0.0) } else { v } as f32;
        match self {
            FloatLayer::Conv2d {
                geometry: g,
                weights,
                bias,
                relu: r,
            } => {
                let mut out = vec![0.0; g.output_len()];
                for_each_window(g, |oy, ox, taps| {
                    for oc in 0..g.out_c {
                        let mut acc = bias[oc] as f64;
                        for &(ky, kx, iy, ix) in taps {
                            for ic in 0..g.in_c {
                                acc += x[(iy * g.in_w + ix) * g.in_c + ic] as f64
                                    * weights[((oc * g.k_h + ky) * g.k_w + kx) * g.in_c + ic]
                                        as f64;
                            }
                        }
                        out[(oy * g.out_w() + ox) * g.out_c + oc] = relu(acc, *r);
                    }
                });
                out
            }
            FloatLayer::DepthwiseConv2d {
                geometry: g,
                depth_multiplier,
                weights,
                bias,
                relu: r,
            } => {
                let mut out = vec![0.0; g.output_len()];
                for_each_window(g, |oy, ox, taps| {
                    for oc in 0..g.out_c {
                        let ic = oc / depth_multiplier;
                        let mut acc = bias[oc] as f64;
                        for &(ky, kx, iy, ix) in taps {
                            acc += x[(iy * g.in_w + ix) * g.in_c + ic] as f64
                                * weights[(ky * g.k_w + kx) * g.out_c + oc] as f64;
                        }
                        out[(oy * g.out_w() + ox) * g.out_c + oc] = relu(acc, *r);
                    }
                });
                out
            }
            FloatLayer::Dense {
                depth,
                units,
                weights,
                bias,
                relu: r,
            } => (0..*units)
                .map(|o| {
                    let row = &weights[o * depth..(o + 1) * depth];
                    let acc: f64 = row.iter().zip(x).map(|(&w, &v)| w as f64 * v as f64).sum();
                    relu(acc + bias[o] as f64, *r)
                })
                .collect(),
            FloatLayer::MaxPool { geometry: g } | FloatLayer::AvgPool { geometry: g } => {
                let max = matches!(self, FloatLayer::MaxPool { .. });
                let mut out = vec![0.0; g.output_len()];
                for_each_window(g, |oy, ox, taps| {
                    for c in 0..g.in_c {
                        let cells = taps
                            .iter()
                            .map(|&(_, _, iy, ix)| x[(iy * g.in_w + ix) * g.in_c + c]);
                        out[(oy * g.out_w() + ox) * g.out_c + c] = if max {
                            cells.fold(f32::NEG_INFINITY, f32::max)
                        } else {
                            (cells.map(f64::from).sum::<f64>() / taps.len() as f64) as f32
                        };
                    }
                });
                out
            }
            FloatLayer::Relu { .. } => x.iter().map(|v| v.max(0.0)).collect(),
            FloatLayer::Softmax { classes, .. } => x
                .chunks(*classes)
                .flat_map(|row| {
                    let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let e: Vec<f64> = row.iter().map(|&v| ((v - m) as f64).exp()).collect();
                    let s: f64 = e.iter().sum();
                    e.into_iter().map(move |v| (v / s) as f32)
                })
                .collect(),
        }
    }

    /// Output elements per image.
    pub fn output_len(&self) -> usize {
        match self {
            FloatLayer::Conv2d { geometry, .. }
            | FloatLayer::DepthwiseConv2d { geometry, .. }
            | FloatLayer::MaxPool { geometry }
            | FloatLayer::AvgPool { geometry } => geometry.output_len(),
            FloatLayer::Dense { units, .. } => *units,
            FloatLayer::Relu { len } | FloatLayer::Softmax { len, .. } => *len,
        }
    }
}

impl FloatModel {
    /// Every layer's output for one NHWC image (the last is the model's output).
    pub fn forward_all(&self, image: &[f32]) -> Vec<Vec<f32>> {
        let mut outs: Vec<Vec<f32>> = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let x = outs.last().map_or(image, Vec::as_slice);
            let y = layer.forward(x);
            outs.push(y);
        }
        outs
    }
}
