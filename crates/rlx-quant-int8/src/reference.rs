//! The integer reference model: a plain interpreter of a
//! [`QuantizedModel`], written from TFLite's reference semantics with wide
//! integers and without the kernels' pairing or tap skipping (padding reads
//! the input zero point). The Cortex-M kernels and the RTL must match it
//! bit for bit.

use crate::float_model::for_each_window as windows;
use crate::math::requantize_reference;
use crate::model::{Geometry, QLayer, QWeights, QuantizedModel};
use crate::QuantError;

fn finish(acc: i64, p: &QWeights, c: usize) -> i8 {
    let acc = i32::try_from(acc).expect("accumulator bounded by the quantizer's depth check");
    let v =
        requantize_reference(acc, p.multiplier[c], p.shift[c]) as i64 + p.output.zero_point as i64;
    v.clamp(p.activation.0 as i64, p.activation.1 as i64) as i8
}

/// `x` read at `(iy, ix, c)` of the zero-point-padded image.
fn padded(x: &[i8], g: &Geometry, iy: isize, ix: isize, c: usize, zp: i32) -> i64 {
    if iy < 0 || ix < 0 || iy as usize >= g.in_h || ix as usize >= g.in_w {
        zp as i64
    } else {
        x[(iy as usize * g.in_w + ix as usize) * g.in_c + c] as i64
    }
}

fn conv(x: &[i8], g: &Geometry, p: &QWeights, depthwise: Option<usize>) -> Vec<i8> {
    let zp = p.input.zero_point;
    let mut out = vec![0i8; g.output_len()];
    for oy in 0..g.out_h() {
        for ox in 0..g.out_w() {
            for oc in 0..g.out_c {
                let mut acc = p.bias[oc] as i64;
                for ky in 0..g.k_h {
                    for kx in 0..g.k_w {
                        let iy = (oy * g.stride_h + ky) as isize - g.pads[0] as isize;
                        let ix = (ox * g.stride_w + kx) as isize - g.pads[2] as isize;
                        match depthwise {
                            Some(dm) => {
                                let v = padded(x, g, iy, ix, oc / dm, zp);
                                let w = p.weights[(ky * g.k_w + kx) * g.out_c + oc] as i64;
                                acc += (v - zp as i64) * w;
                            }
                            None => {
                                for ic in 0..g.in_c {
                                    let v = padded(x, g, iy, ix, ic, zp);
                                    let w = p.weights
                                        [((oc * g.k_h + ky) * g.k_w + kx) * g.in_c + ic]
                                        as i64;
                                    acc += (v - zp as i64) * w;
                                }
                            }
                        }
                    }
                }
                out[(oy * g.out_w() + ox) * g.out_c + oc] = finish(acc, p, oc);
            }
        }
    }
    out
}

fn pool(x: &[i8], g: &Geometry, max: bool) -> Vec<i8> {
    let mut out = vec![0i8; g.output_len()];
    windows(g, |oy, ox, taps| {
        for c in 0..g.in_c {
            let cells = taps
                .iter()
                .map(|&(_, _, iy, ix)| x[(iy * g.in_w + ix) * g.in_c + c] as i64);
            let v = if max {
                cells.max().unwrap_or(-128)
            } else {
                let (s, n) = cells.fold((0i64, 0i64), |(s, n), v| (s + v, n + 1));
                s.signum() * ((s.abs() + n / 2) / n)
            };
            out[(oy * g.out_w() + ox) * g.out_c + c] = v.clamp(-128, 127) as i8;
        }
    });
    out
}

/// Runs one layer on one image.
pub fn run_layer(layer: &QLayer, x: &[i8]) -> Vec<i8> {
    match layer {
        QLayer::Conv2d { geometry, params } => conv(x, geometry, params, None),
        QLayer::DepthwiseConv2d {
            geometry,
            depth_multiplier,
            params,
        } => conv(x, geometry, params, Some(*depth_multiplier)),
        QLayer::Dense {
            depth,
            units,
            params,
        } => (0..*units)
            .map(|o| {
                let row = &params.weights[o * depth..(o + 1) * depth];
                let acc: i64 = params.bias[o] as i64
                    + row
                        .iter()
                        .zip(x)
                        .map(|(&w, &v)| (v as i64 - params.input.zero_point as i64) * w as i64)
                        .sum::<i64>();
                finish(acc, params, o)
            })
            .collect(),
        QLayer::MaxPool { geometry, .. } => pool(x, geometry, true),
        QLayer::AvgPool { geometry, .. } => pool(x, geometry, false),
        QLayer::Relu { quant, .. } => x.iter().map(|&v| v.max(quant.zero_point as i8)).collect(),
        QLayer::Softmax { classes, .. } => {
            // The fixed-point exp / reciprocal has one implementation, the
            // kernel's, checked against numpy in rlx-cortexm's tests.
            let params = layer.softmax_params().expect("a softmax layer");
            let mut out = vec![0i8; x.len()];
            rlx_cortexm::softmax(x, *classes, &params, &mut out)
                .expect("softmax parameters come from softmax_params");
            out
        }
    }
}

impl QuantizedModel {
    /// Every layer's int8 output for one quantized NHWC image.
    pub fn run_reference_all(&self, image: &[i8]) -> Result<Vec<Vec<i8>>, QuantError> {
        if image.len() != self.input_len() {
            return Err(QuantError::InputLength {
                expected: self.input_len(),
                actual: image.len(),
            });
        }
        let mut outs: Vec<Vec<i8>> = Vec::with_capacity(self.layers.len());
        for layer in &self.layers {
            let x = outs.last().map_or(image, Vec::as_slice);
            let y = run_layer(layer, x);
            outs.push(y);
        }
        Ok(outs)
    }

    /// The last layer's int8 output for one quantized NHWC image.
    pub fn run_reference(&self, image: &[i8]) -> Result<Vec<i8>, QuantError> {
        Ok(self
            .run_reference_all(image)?
            .pop()
            .unwrap_or_else(|| image.to_vec()))
    }

    /// The class (first maximum of the output) of one float NHWC image.
    pub fn predict(&self, image: &[f32]) -> Result<usize, QuantError> {
        let out = self.run_reference(&self.quantize_input(image))?;
        let mut best = 0;
        for (i, &v) in out.iter().enumerate() {
            if v > out[best] {
                best = i;
            }
        }
        Ok(best)
    }
}
