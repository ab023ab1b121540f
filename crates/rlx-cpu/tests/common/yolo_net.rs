//! The YOLO-style fixtures' inputs and layers (tools/gen_yolo_block_fixtures.py's
//! `values` and `Weights`), shared by the tests that build its blocks.

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
        g.conv(x, w, Some(b), super::conv_window(k, stride), 1)
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

    /// The scripts' CSP block on `x` `[B, 16, H, W]`: `d = cbs(x, 16 -> 32,
    /// 3x3 s2)`, branches `a` / `bb` (1x1 to 16), `bottlenecks` residual
    /// bottlenecks (1x1, 3x3) on `a`, `cbs(concat(a, bb), 1x1 32)`.
    pub fn csp(&mut self, g: &mut Graph, x: NodeId, bottlenecks: usize) -> NodeId {
        let d = self.conv(g, x, (16, 32, 3), 2);
        let mut a = self.conv(g, d, (32, 16, 1), 1);
        let bb = self.conv(g, d, (32, 16, 1), 1);
        for _ in 0..bottlenecks {
            let t = self.conv(g, a, (16, 16, 1), 1);
            let t = self.conv(g, t, (16, 16, 3), 1);
            a = g.add(a, t);
        }
        let cat = g.concat_(&[a, bb], 1);
        self.conv(g, cat, (32, 32, 1), 1)
    }

    /// The scripts' SPPF block on `x` `[B, 32, H, W]`: `s = cbs(x, 1x1 32)`,
    /// three chained 5x5 stride-1 max pools, `cbs(concat(s, p1, p2, p3), 1x1 32)`.
    pub fn sppf(&mut self, g: &mut Graph, x: NodeId) -> NodeId {
        let mut pools = vec![self.conv(g, x, (32, 32, 1), 1)];
        for _ in 0..3 {
            let last = *pools.last().unwrap();
            pools.push(g.max_pool2d(last, [5, 5], [1, 1], [2, 2]));
        }
        let cat = g.concat_(&pools, 1);
        self.conv(g, cat, (128, 32, 1), 1)
    }
}
