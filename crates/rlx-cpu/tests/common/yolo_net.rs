//! The YOLO-style fixtures' inputs and layers (tools/gen_yolo_block_fixtures.py's
//! `values` and `Weights`), shared by the tests that build its blocks.

use rlx_ir::op::Window;
use rlx_ir::{Graph, GraphExt, HostTensor, NodeId};
use serde_json::Value;

/// The fixture script's `values`: each step one correctly rounded f32 op.
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| ((i * 7919 + seed * 104729) % 1000) as f32 / 500.0 - 1.0)
        .map(|v| v * 0.0625)
        .collect()
}

/// An input of `dims`: `values(.., seed) * 16`.
pub fn input(dims: &[usize], seed: u64) -> HostTensor {
    let xs: Vec<f32> = values(dims.iter().product(), seed)
        .iter()
        .map(|v| v * 16.0)
        .collect();
    HostTensor::from_slice(&xs, dims).unwrap()
}

/// A JSON array of numbers.
pub fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Builds layers with weights `values(.., seed) * 4` and biases
/// `values(.., seed + 1)`, seeds taken in order (the script's `Weights`).
pub struct Cbs {
    /// The next layer's weight seed.
    pub seed: u64,
}

impl Cbs {
    /// The next weight of `dims` and bias of `bias` elements, as constants.
    pub fn weights(&mut self, g: &mut Graph, dims: &[usize], bias: usize) -> (NodeId, NodeId) {
        let w: Vec<f32> = values(dims.iter().product(), self.seed)
            .iter()
            .map(|v| v * 4.0)
            .collect();
        let w = g.constant_tensor(&HostTensor::from_slice(&w, dims).unwrap());
        let b = g.constant_tensor(
            &HostTensor::from_slice(&values(bias, self.seed + 1), &[bias]).unwrap(),
        );
        self.seed += 2;
        (w, b)
    }

    /// `conv(x, w [o, c, k, k], stride, pad k / 2) + b`.
    pub fn conv_bias(
        &mut self,
        g: &mut Graph,
        x: NodeId,
        (c, o, k): (usize, usize, usize),
        stride: usize,
    ) -> NodeId {
        let (w, b) = self.weights(g, &[o, c, k, k], o);
        let window = Window {
            kernel: vec![],
            stride: vec![stride; 2],
            padding: vec![(k / 2, k / 2); 2],
            dilation: vec![1, 1],
        };
        g.conv(x, w, Some(b), window, 1)
    }

    /// `silu(conv(x, w [o, c, k, k], stride, pad k / 2) + b)`.
    pub fn conv(
        &mut self,
        g: &mut Graph,
        x: NodeId,
        shape: (usize, usize, usize),
        stride: usize,
    ) -> NodeId {
        let v = self.conv_bias(g, x, shape, stride);
        let s = g.sigmoid(v);
        g.mul(v, s)
    }
}
