//! The seed's explicit-shape builders: inherent `Graph` methods whose given
//! shape is checked against inference. A mismatch panics with the
//! [`IrError`] message; [`Graph::try_node`] is the fallible form.

use crate::op::{Activation, BinaryOp, CmpOp, MaskKind, ReduceOp, Window};
use crate::{Graph, NodeId, Op, Shape};

impl Graph {
    /// `a @ b` (numpy matmul), checked against `shape`.
    pub fn matmul(&mut self, a: NodeId, b: NodeId, shape: Shape) -> NodeId {
        self.node_or_panic(Op::MatMul, &[a, b], Some(shape))
    }

    /// Elementwise binary op, checked against `shape`.
    pub fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Binary(op), &[a, b], Some(shape))
    }

    /// Elementwise comparison, checked against `shape` (Bool).
    pub fn compare(&mut self, op: CmpOp, a: NodeId, b: NodeId, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Compare(op), &[a, b], Some(shape))
    }

    /// Elementwise unary function / activation, checked against `shape`.
    pub fn activation(&mut self, act: Activation, x: NodeId, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Unary(act), &[x], Some(shape))
    }

    /// Reduction over `axes`, checked against `shape`.
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        x: NodeId,
        axes: &[usize],
        keep_dim: bool,
        shape: Shape,
    ) -> NodeId {
        let mut axes = axes.to_vec();
        axes.sort_unstable();
        axes.dedup();
        self.node_or_panic(Op::Reduce { op, axes, keep_dim }, &[x], Some(shape))
    }

    /// Softmax along `axis`, checked against `shape`.
    pub fn softmax(&mut self, x: NodeId, axis: usize, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Softmax { axis }, &[x], Some(shape))
    }

    /// Reshape to `shape` (same element count).
    pub fn reshape(&mut self, x: NodeId, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Reshape, &[x], Some(shape))
    }

    /// Axis permutation, checked against `shape`.
    pub fn transpose(&mut self, x: NodeId, perm: &[usize], shape: Shape) -> NodeId {
        self.node_or_panic(
            Op::Transpose {
                perm: perm.to_vec(),
            },
            &[x],
            Some(shape),
        )
    }

    /// Concatenation along `axis`, checked against `shape`.
    pub fn concat(&mut self, xs: &[NodeId], axis: usize, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Concat { axis }, xs, Some(shape))
    }

    /// numpy `take(x, indices, axis)`, checked against `shape`.
    pub fn gather(&mut self, x: NodeId, indices: NodeId, axis: usize, shape: Shape) -> NodeId {
        self.node_or_panic(Op::Gather { axis }, &[x, indices], Some(shape))
    }

    /// Layer norm over the last axis with gamma and beta, checked against `shape`.
    pub fn layer_norm(
        &mut self,
        x: NodeId,
        gamma: NodeId,
        beta: NodeId,
        eps: f64,
        shape: Shape,
    ) -> NodeId {
        let axis = self.shape(x).rank().saturating_sub(1);
        self.node_or_panic(Op::LayerNorm { axis, eps }, &[x, gamma, beta], Some(shape))
    }

    /// Scaled dot-product attention with the given mask kind, checked against
    /// `shape`. `mask` is the mask / bias input for `Custom` / `Bias`.
    pub fn attention_kind(
        &mut self,
        kind: MaskKind,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        mask: Option<NodeId>,
        shape: Shape,
    ) -> NodeId {
        let mut inputs = vec![q, k, v];
        inputs.extend(mask);
        self.node_or_panic(
            Op::Attention {
                mask: kind,
                scale: None,
                softcap: None,
                layout: crate::op::AttentionLayout::HeadsMajor,
            },
            &inputs,
            Some(shape),
        )
    }

    /// 2-d convolution `x [N, C, H, W] * w [O, C/groups, kh, kw] (+ bias)`, checked against `shape`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv2d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: [usize; 2],
        padding: [usize; 2],
        dilation: [usize; 2],
        groups: usize,
        shape: Shape,
    ) -> NodeId {
        let mut inputs = vec![x, w];
        inputs.extend(bias);
        let window = Window {
            kernel: Vec::new(),
            stride: stride.to_vec(),
            padding: padding.iter().map(|&p| (p, p)).collect(),
            dilation: dilation.to_vec(),
        };
        self.node_or_panic(Op::Conv { window, groups }, &inputs, Some(shape))
    }
}
