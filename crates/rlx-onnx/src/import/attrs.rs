//! [`NodeCx`]: what an op importer sees — the graph being built, the node's
//! inputs (and their constant data), its attributes with defaults, and
//! helpers that build IR nodes with errors naming the ONNX node.

use super::{node_label, Value};
use crate::proto::{attribute_proto::AttributeType, AttributeProto, NodeProto};
use crate::tensor::{tensor_from_proto, to_i64s};
use crate::{OnnxError, Result};
use rlx_ir::{DType, Dim, Graph, HostTensor, NodeId, Op, Shape};

/// The most elements a shape built at import may have (2^40).
pub(crate) const MAX_ELEMENTS: u64 = 1 << 40;

/// Checks that the static part of `dims` stays within [`MAX_ELEMENTS`].
pub(crate) fn check_size(dims: &[Dim]) -> std::result::Result<(), String> {
    let mut n: u64 = 1;
    for d in dims {
        if let Some(v) = d.as_static() {
            n = n
                .checked_mul(v as u64)
                .filter(|&n| n <= MAX_ELEMENTS)
                .ok_or_else(|| format!("dims {dims:?} exceed {MAX_ELEMENTS} elements"))?;
        }
    }
    Ok(())
}

/// The importer's view of one node.
pub(crate) struct NodeCx<'a> {
    /// The graph being built.
    pub g: &'a mut Graph,
    node: &'a NodeProto,
    index: usize,
    /// The default-domain opset version.
    pub opset: i64,
    ins: &'a [Option<Value>],
    /// ONNX element types of the outputs, for importers that produce narrow
    /// values (empty: none / the pass-through rule).
    pub out_tags: Vec<Option<i32>>,
}

impl<'a> NodeCx<'a> {
    pub(super) fn new(
        g: &'a mut Graph,
        node: &'a NodeProto,
        index: usize,
        opset: i64,
        ins: &'a [Option<Value>],
    ) -> NodeCx<'a> {
        NodeCx {
            g,
            node,
            index,
            opset,
            ins,
            out_tags: Vec::new(),
        }
    }

    /// The ONNX op type.
    pub fn op_type(&self) -> &str {
        self.node.op_type.as_deref().unwrap_or_default()
    }

    /// An error about this node.
    pub fn err(&self, reason: impl Into<String>) -> OnnxError {
        OnnxError::Node {
            node: node_label(self.node, self.index),
            op_type: self.op_type().to_string(),
            reason: reason.into(),
        }
    }

    /// An "unsupported" error about this node, naming the missing capability.
    pub fn unsupported(&self, reason: impl Into<String>) -> OnnxError {
        OnnxError::Unsupported(vec![crate::UnsupportedNode {
            op_type: self.op_type().to_string(),
            node: node_label(self.node, self.index),
            reason: reason.into(),
        }])
    }

    /// Number of input slots (including empty optional ones).
    pub fn n_inputs(&self) -> usize {
        self.ins.len()
    }

    /// Number of outputs the node declares (including empty ones).
    pub fn n_outputs(&self) -> usize {
        self.node.output.len()
    }

    /// True when output `i` is requested.
    pub fn wants_output(&self, i: usize) -> bool {
        self.node.output.get(i).is_some_and(|s| !s.is_empty())
    }

    /// Optional input `i`.
    pub fn opt(&self, i: usize) -> Option<NodeId> {
        self.ins.get(i).and_then(|v| v.as_ref()).map(|v| v.node)
    }

    /// Required input `i`.
    pub fn x(&self, i: usize) -> Result<NodeId> {
        self.opt(i)
            .ok_or_else(|| self.err(format!("required input {i} is missing")))
    }

    /// The narrow ONNX element type of input `i`, if it has one.
    pub fn tag(&self, i: usize) -> Option<i32> {
        self.ins.get(i).and_then(|v| v.as_ref()).and_then(|v| v.tag)
    }

    /// Input `i` as a shape value (constant integers or symbolic dims).
    pub fn shape_value(&self, i: usize) -> Option<super::symbolic::SymShape> {
        self.ins
            .get(i)
            .and_then(|v| v.as_ref())
            .and_then(super::symbolic::shape_value)
    }

    /// Input `i` as shape entries that must be known (as integers or dim
    /// symbols) at import.
    pub fn shape_ints(&self, i: usize, what: &str) -> Result<Vec<super::symbolic::SymInt>> {
        match self.shape_value(i) {
            Some(s) => Ok(s.items),
            None => Err(OnnxError::NeedsValue {
                value: self.node.input.get(i).cloned().unwrap_or_default(),
                node: node_label(self.node, self.index),
                what: format!("{} {what}", self.op_type()),
            }),
        }
    }

    /// Constant data of input `i`, if known at import.
    pub fn konst(&self, i: usize) -> Option<&HostTensor> {
        self.ins
            .get(i)
            .and_then(|v| v.as_ref())
            .and_then(|v| v.konst.as_deref())
    }

    /// Input `i` as integers that must be known at import (shapes, axes, pads).
    pub fn const_ints(&self, i: usize, what: &str) -> Result<Vec<i64>> {
        match self.konst(i) {
            Some(t) => Ok(to_i64s(t)),
            None => Err(OnnxError::NeedsValue {
                value: self.node.input.get(i).cloned().unwrap_or_default(),
                node: node_label(self.node, self.index),
                what: format!("{} {what}", self.op_type()),
            }),
        }
    }

    /// Optional constant integer input.
    pub fn opt_const_ints(&self, i: usize, what: &str) -> Result<Option<Vec<i64>>> {
        if self.opt(i).is_none() {
            return Ok(None);
        }
        self.const_ints(i, what).map(Some)
    }

    /// Input `i` as floats that must be known at import.
    pub fn const_f64s(&self, i: usize, what: &str) -> Result<Vec<f64>> {
        match self.konst(i) {
            Some(t) => Ok(t.to_f64_lossy()),
            None => Err(OnnxError::NeedsValue {
                value: self.node.input.get(i).cloned().unwrap_or_default(),
                node: node_label(self.node, self.index),
                what: format!("{} {what}", self.op_type()),
            }),
        }
    }

    /// The shape of node `id`.
    pub fn shape(&self, id: NodeId) -> Shape {
        self.g.shape(id).clone()
    }

    /// The rank of node `id`.
    pub fn rank(&self, id: NodeId) -> usize {
        self.g.shape(id).rank()
    }

    /// The dtype of node `id`.
    pub fn dtype(&self, id: NodeId) -> DType {
        self.g.shape(id).dtype()
    }

    /// The static dims of `id`, or an error naming what needs them.
    pub fn static_dims(&self, id: NodeId, what: &str) -> Result<Vec<usize>> {
        let s = self.g.shape(id);
        s.static_dims().ok_or_else(|| {
            self.err(format!(
                "{what} needs static dims, the input is {s} (bind its symbolic dims)"
            ))
        })
    }

    fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.node
            .attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
    }

    /// True when attribute `name` is present.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// Integer attribute with a default.
    pub fn attr_i(&self, name: &str, default: i64) -> i64 {
        self.attr(name).and_then(|a| a.i).unwrap_or(default)
    }

    /// Float attribute with a default.
    pub fn attr_f(&self, name: &str, default: f64) -> f64 {
        self.attr(name).and_then(|a| a.f).map_or(default, f64::from)
    }

    /// String attribute with a default.
    pub fn attr_s(&self, name: &str, default: &str) -> String {
        self.attr(name).and_then(|a| a.s.as_ref()).map_or_else(
            || default.to_string(),
            |s| String::from_utf8_lossy(s).into_owned(),
        )
    }

    /// Integer-list attribute, if present.
    pub fn attr_ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }

    /// Float-list attribute, if present.
    pub fn attr_floats(&self, name: &str) -> Option<Vec<f32>> {
        self.attr(name).map(|a| a.floats.clone())
    }

    /// String-list attribute, if present.
    pub fn attr_strings(&self, name: &str) -> Option<Vec<String>> {
        self.attr(name).map(|a| {
            a.strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
    }

    /// Tensor attribute, if present.
    pub fn attr_t(&self, name: &str) -> Result<Option<HostTensor>> {
        match self.attr(name) {
            Some(a) if a.r#type == Some(AttributeType::Tensor as i32) || a.t.is_some() => {
                let t =
                    a.t.as_ref()
                        .ok_or_else(|| self.err(format!("attribute {name} has no tensor")))?;
                tensor_from_proto(t, None).map(Some)
            }
            Some(_) => Err(self.err(format!("attribute {name} is not a tensor"))),
            None => Ok(None),
        }
    }

    /// An axis attribute / value normalised against `rank`.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        if axis < -r || axis >= r {
            return Err(self.err(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(if axis < 0 {
            (axis + r) as usize
        } else {
            axis as usize
        })
    }

    /// Builds an IR node, naming this ONNX node on error. A declared shape
    /// (one computed from data) must stay within [`MAX_ELEMENTS`].
    pub fn node(&mut self, op: Op, inputs: &[NodeId], declared: Option<Shape>) -> Result<NodeId> {
        if let Some(s) = &declared {
            check_size(s.dims()).map_err(|e| self.err(e))?;
        }
        let label = node_label(self.node, self.index);
        let op_type = self.op_type().to_string();
        self.g
            .try_node(op, inputs, declared)
            .map_err(|e| OnnxError::Node {
                node: label,
                op_type,
                reason: e.to_string(),
            })
    }

    /// A constant tensor node.
    pub fn constant(&mut self, t: &HostTensor) -> NodeId {
        self.g.constant_tensor(t)
    }

    /// A rank-0 constant.
    pub fn scalar(&mut self, v: f64, dtype: DType) -> NodeId {
        self.g.scalar(v, dtype)
    }

    /// An I64 vector constant.
    pub fn i64s(&mut self, v: &[i64]) -> NodeId {
        let t = HostTensor::from_slice(v, &[v.len()]).expect("1-d");
        self.g.constant_tensor(&t)
    }

    /// `0, 1, 2, ..` along `axis` of an I64 tensor of `dims`.
    pub fn iota_i64(&mut self, dims: &[usize], axis: usize) -> Result<NodeId> {
        self.node(
            Op::Iota {
                axis,
                start: 0.0,
                step: 1.0,
            },
            &[],
            Some(Shape::new(dims, DType::I64)),
        )
    }

    /// Converts to `dtype` (no node when already of that dtype).
    pub fn cast(&mut self, x: NodeId, dtype: DType) -> Result<NodeId> {
        if self.dtype(x) == dtype {
            return Ok(x);
        }
        let s = self.shape(x).with_dtype(dtype);
        self.node(Op::Cast, &[x], Some(s))
    }

    /// Reshape to static or symbolic dims.
    pub fn reshape(&mut self, x: NodeId, dims: Vec<Dim>) -> Result<NodeId> {
        if self.g.shape(x).dims() == dims.as_slice() {
            return Ok(x);
        }
        let s = self.shape(x).with_dims(dims);
        self.node(Op::Reshape, &[x], Some(s))
    }

    /// Reshape to static dims.
    pub fn reshape_static(&mut self, x: NodeId, dims: &[usize]) -> Result<NodeId> {
        self.reshape(x, dims.iter().map(|&d| Dim::Static(d)).collect())
    }

    /// Broadcast to dims.
    pub fn broadcast(&mut self, x: NodeId, dims: Vec<Dim>) -> Result<NodeId> {
        if self.g.shape(x).dims() == dims.as_slice() {
            return Ok(x);
        }
        let s = self.shape(x).with_dims(dims);
        self.node(Op::Broadcast, &[x], Some(s))
    }

    /// Elementwise binary op.
    pub fn bin(&mut self, op: rlx_ir::op::BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.node(Op::Binary(op), &[a, b], None)
    }

    /// Elementwise unary op.
    pub fn un(&mut self, op: rlx_ir::op::UnaryOp, x: NodeId) -> Result<NodeId> {
        self.node(Op::Unary(op), &[x], None)
    }

    /// `x op scalar` with the scalar in `x`'s dtype.
    pub fn bin_scalar(&mut self, op: rlx_ir::op::BinaryOp, x: NodeId, v: f64) -> Result<NodeId> {
        let s = self.scalar(v, self.dtype(x));
        self.bin(op, x, s)
    }

    /// Permutes axes.
    pub fn transpose(&mut self, x: NodeId, perm: Vec<usize>) -> Result<NodeId> {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(x);
        }
        self.node(Op::Transpose { perm }, &[x], None)
    }

    /// A reduction (`axes` sorted unique).
    pub fn reduce(
        &mut self,
        op: rlx_ir::op::ReduceOp,
        x: NodeId,
        mut axes: Vec<usize>,
        keep_dim: bool,
    ) -> Result<NodeId> {
        axes.sort_unstable();
        axes.dedup();
        self.node(Op::Reduce { op, axes, keep_dim }, &[x], None)
    }

    /// numpy `x[start:start+len:step]` along `axis` (static start / length).
    pub fn slice_axis(
        &mut self,
        x: NodeId,
        axis: usize,
        start: usize,
        len: usize,
        step: i64,
    ) -> Result<NodeId> {
        let s = self.shape(x);
        let r = s.rank();
        if axis >= r {
            return Err(self.err(format!("axis {axis} is out of range for {s}")));
        }
        let mut starts = vec![0; r];
        let mut steps = vec![1; r];
        let mut dims = s.dims().to_vec();
        starts[axis] = start;
        steps[axis] = step;
        dims[axis] = Dim::Static(len);
        self.node(
            Op::Slice(rlx_ir::op::SliceSpec { starts, steps }),
            &[x],
            Some(s.with_dims(dims)),
        )
    }
}
