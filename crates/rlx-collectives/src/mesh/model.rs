//! What the planner is told: the model's layers and the cluster's devices.

use super::cost::LinkSpec;

/// One layer of a model, per training sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerProfile {
    /// Number of parameters.
    pub params: u64,
    /// Bytes of activations the layer keeps for the backward pass, per sample.
    pub activation_bytes: u64,
    /// Bytes of the layer's output, per sample (what crosses a pipeline
    /// boundary after it, and what tensor parallelism all-reduces).
    pub output_bytes: u64,
    /// Forward floating-point operations per sample.
    pub forward_flops: f64,
}

/// A model as the planner sees it: its layers in order and how it trains.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProfile {
    /// The layers, input to output; pipeline stages take contiguous runs.
    pub layers: Vec<LayerProfile>,
    /// Samples per optimizer step over the whole world.
    pub global_batch: u64,
    /// Micro-batches a pipeline splits each replica's batch into (>= 1).
    pub microbatches: u64,
    /// Bytes of one parameter (4 for f32).
    pub bytes_per_param: u64,
    /// Bytes of one gradient element (4 for f32).
    pub bytes_per_grad: u64,
    /// Optimizer-state bytes per parameter (8 for Adam's two f32 moments, 0 for SGD).
    pub optimizer_bytes_per_param: u64,
    /// Backward FLOPs as a multiple of forward FLOPs (2 for dense layers).
    pub backward_flops_factor: f64,
}

impl ModelProfile {
    /// An f32 model trained with SGD (no optimizer state), backward = 2× forward,
    /// one micro-batch.
    pub fn f32_sgd(layers: Vec<LayerProfile>, global_batch: u64) -> Self {
        ModelProfile {
            layers,
            global_batch,
            microbatches: 1,
            bytes_per_param: 4,
            bytes_per_grad: 4,
            optimizer_bytes_per_param: 0,
            backward_flops_factor: 2.0,
        }
    }

    /// A multi-layer perceptron with the given widths (`[in, h1, ..., out]`):
    /// a dense layer (weights + bias) per consecutive pair, f32 activations.
    pub fn mlp(widths: &[u64], global_batch: u64) -> Self {
        let layers = widths
            .windows(2)
            .map(|w| LayerProfile {
                params: w[0] * w[1] + w[1],
                activation_bytes: 4 * (w[0] + w[1]),
                output_bytes: 4 * w[1],
                forward_flops: 2.0 * (w[0] * w[1]) as f64,
            })
            .collect();
        Self::f32_sgd(layers, global_batch)
    }

    /// Total parameter count.
    pub fn total_params(&self) -> u64 {
        self.layers
            .iter()
            .fold(0u64, |a, l| a.saturating_add(l.params))
    }

    /// Bytes each parameter costs on the device that owns it
    /// (value + gradient + optimizer state).
    pub fn bytes_per_owned_param(&self) -> u64 {
        self.bytes_per_param
            .saturating_add(self.bytes_per_grad)
            .saturating_add(self.optimizer_bytes_per_param)
    }
}

/// One device: its memory and its sustained compute rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceSpec {
    /// Memory available to the model, in bytes.
    pub memory_bytes: u64,
    /// Sustained FLOPs per second on this model's kernels.
    pub flops_per_s: f64,
}

/// The cluster: one [`DeviceSpec`] per world rank and the link between ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSpec {
    /// Devices by world rank.
    pub devices: Vec<DeviceSpec>,
    /// The link every collective runs over.
    pub link: LinkSpec,
}

impl ClusterSpec {
    /// `n` identical devices joined by `link`.
    pub fn uniform(n: usize, device: DeviceSpec, link: LinkSpec) -> Self {
        ClusterSpec {
            devices: vec![device; n],
            link,
        }
    }
}
