//! The [`QuantizedModel`] as `rlx-cortexm` layers borrowing its data, and
//! a host run of the kernels over them.

use crate::model::{QLayer, QWeights, QuantizedModel};
use rlx_cortexm::model::{run_layers, scratch_len, Layer, ModelError, Weights};
use rlx_cortexm::QParams;

fn weights(p: &QWeights) -> Weights<'_> {
    Weights {
        weights: &p.weights,
        bias: &p.bias,
        multiplier: &p.multiplier,
        shift: &p.shift,
        q: QParams {
            input_zero_point: p.input.zero_point,
            output_zero_point: p.output.zero_point,
            activation_min: p.activation.0,
            activation_max: p.activation.1,
        },
    }
}

/// One layer for the kernels.
pub fn cortexm_layer(layer: &QLayer) -> Layer<'_> {
    match layer {
        QLayer::Conv2d { geometry, params } => Layer::Conv2d {
            geometry: geometry.to_cortexm(),
            params: weights(params),
        },
        QLayer::DepthwiseConv2d {
            geometry,
            depth_multiplier,
            params,
        } => Layer::DepthwiseConv2d {
            geometry: geometry.to_cortexm(),
            depth_multiplier: *depth_multiplier,
            params: weights(params),
        },
        QLayer::Dense {
            depth,
            units,
            params,
        } => Layer::Dense {
            depth: *depth,
            units: *units,
            params: weights(params),
        },
        QLayer::MaxPool { geometry, .. } => Layer::MaxPool {
            geometry: geometry.to_cortexm(),
            activation: (-128, 127),
        },
        QLayer::AvgPool { geometry, .. } => Layer::AvgPool {
            geometry: geometry.to_cortexm(),
            activation: (-128, 127),
        },
        QLayer::Relu { len, quant } => Layer::Relu {
            len: *len,
            zero_point: quant.zero_point as i8,
        },
        QLayer::Softmax { len, classes, .. } => Layer::Softmax {
            len: *len,
            classes: *classes,
            params: layer.softmax_params().expect("a softmax layer"),
        },
    }
}

impl QuantizedModel {
    /// The layers as `rlx-cortexm` sees them (what `model_weights.rs` holds).
    pub fn cortexm_layers(&self) -> Vec<Layer<'_>> {
        self.layers.iter().map(cortexm_layer).collect()
    }

    /// Runs the `rlx-cortexm` kernels (the portable path on the host) on
    /// one quantized image.
    pub fn run_cortexm(&self, image: &[i8]) -> Result<Vec<i8>, ModelError> {
        let layers = self.cortexm_layers();
        let n = scratch_len(&layers);
        let (mut a, mut b) = (vec![0i8; n], vec![0i8; n]);
        Ok(run_layers(&layers, image, &mut a, &mut b)?.to_vec())
    }
}
