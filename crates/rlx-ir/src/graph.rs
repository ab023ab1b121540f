//! [`Graph`]: an append-only SSA DAG of [`Node`]s.

use crate::element::scalar_constant_bytes;
use crate::{ops, DType, HostTensor, IrError, NodeOrigin, Op, Shape};
use std::collections::HashMap;
use std::fmt;

/// Index of a node in its graph. Insertion order is a topological order:
/// a node's inputs always have smaller ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// One operation with its inputs and its (single) output shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The operation.
    pub op: Op,
    /// Input node ids (all smaller than this node's id).
    pub inputs: Vec<NodeId>,
    /// Output shape and dtype.
    pub shape: Shape,
    /// Optional debug name.
    pub name: Option<String>,
    /// Where the node came from (user code, a decomposition, a pass).
    pub origin: NodeOrigin,
}

/// A tensor program: nodes in topological order plus the output list.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Graph {
    name: String,
    nodes: Vec<Node>,
    outputs: Vec<NodeId>,
}

impl Graph {
    /// An empty graph.
    pub fn new(name: impl Into<String>) -> Graph {
        Graph {
            name: name.into(),
            nodes: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// All nodes, in id order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node `id`. Panics if `id` is not in this graph; use [`Graph::get`] to check.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The node `id`, if it exists.
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    /// The shape of node `id`. Panics if `id` is not in this graph.
    pub fn shape(&self, id: NodeId) -> &Shape {
        &self.node(id).shape
    }

    /// Ids of all nodes.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The outputs.
    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// Sets the outputs (checked by [`crate::verify`] and at compile).
    pub fn set_outputs(&mut self, outputs: Vec<NodeId>) {
        self.outputs = outputs;
    }

    /// Gives node `id` a debug name.
    pub fn set_name(&mut self, id: NodeId, name: impl Into<String>) {
        if let Some(n) = self.nodes.get_mut(id.index()) {
            n.name = Some(name.into());
        }
    }

    /// A named input. Panics on a duplicate name (see [`Graph::try_input`]).
    pub fn input(&mut self, name: &str, shape: Shape) -> NodeId {
        self.try_input(name, shape)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A named input; a duplicate input name is an error.
    pub fn try_input(&mut self, name: &str, shape: Shape) -> Result<NodeId, IrError> {
        if self.find_input(name).is_some() {
            return Err(IrError::DuplicateName {
                kind: "input",
                name: name.into(),
            });
        }
        Ok(self.push_leaf(Op::Input { name: name.into() }, shape))
    }

    /// A named parameter. Panics on a duplicate name (see [`Graph::try_param`]).
    pub fn param(&mut self, name: &str, shape: Shape) -> NodeId {
        self.try_param(name, shape)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A named parameter; a duplicate param name is an error.
    pub fn try_param(&mut self, name: &str, shape: Shape) -> Result<NodeId, IrError> {
        if self.find_param(name).is_some() {
            return Err(IrError::DuplicateName {
                kind: "param",
                name: name.into(),
            });
        }
        Ok(self.push_leaf(Op::Param { name: name.into() }, shape))
    }

    /// A constant holding a host tensor (its bytes shared, not copied).
    pub fn constant_tensor(&mut self, t: &HostTensor) -> NodeId {
        self.push_leaf(
            Op::Constant {
                bytes: t.shared_bytes().clone(),
            },
            t.shape(),
        )
    }

    /// A rank-0 constant of `dtype`.
    pub fn scalar(&mut self, value: f64, dtype: DType) -> NodeId {
        self.push_leaf(
            Op::Constant {
                bytes: scalar_constant_bytes(value, dtype).into(),
            },
            Shape::scalar(dtype),
        )
    }

    /// A constant from raw little-endian bytes (a `Vec<u8>`, or shared
    /// [`crate::ConstBytes`] of another graph); the length must match the shape.
    pub fn try_constant_bytes(
        &mut self,
        bytes: impl Into<crate::ConstBytes>,
        shape: Shape,
    ) -> Result<NodeId, IrError> {
        let bytes = bytes.into();
        let expected = shape
            .size_bytes()
            .ok_or_else(|| IrError::invalid("constant", format!("shape {shape} is not static")))?;
        if bytes.len() != expected {
            return Err(IrError::DataLength {
                what: format!("constant bytes of {shape}"),
                expected,
                given: bytes.len(),
            });
        }
        Ok(self.push_leaf(Op::Constant { bytes }, shape))
    }

    fn push_leaf(&mut self, op: Op, shape: Shape) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node {
            op,
            inputs: Vec::new(),
            shape,
            name: None,
            origin: NodeOrigin::User,
        });
        id
    }

    /// Appends a non-leaf node, inferring its shape. `declared` is required for ops
    /// whose result shape is their payload (reshape, broadcast, cast, iota,
    /// upsample) and, when given for other ops, must equal the inferred shape.
    pub fn try_node(
        &mut self,
        op: Op,
        inputs: &[NodeId],
        declared: Option<Shape>,
    ) -> Result<NodeId, IrError> {
        let mnemonic = || op.mnemonic();
        if op.is_leaf() {
            return Err(IrError::invalid(
                mnemonic(),
                "leaves are built with input / param / constant",
            ));
        }
        let len = self.nodes.len();
        for &i in inputs {
            if i.index() >= len {
                return Err(IrError::DanglingInput {
                    node: mnemonic(),
                    input: i.to_string(),
                    len,
                });
            }
        }
        let shapes: Vec<&Shape> = inputs
            .iter()
            .map(|&i| &self.nodes[i.index()].shape)
            .collect();
        let inferred = ops::infer_shape(&op, &shapes, declared.as_ref())
            .map_err(|reason| IrError::invalid(mnemonic(), reason))?;
        if let Some(given) = declared {
            if given != inferred {
                return Err(IrError::ShapeMismatch {
                    op: mnemonic(),
                    expected: inferred,
                    given,
                });
            }
        }
        let id = NodeId(len as u32);
        self.nodes.push(Node {
            op,
            inputs: inputs.to_vec(),
            shape: inferred,
            name: None,
            origin: NodeOrigin::User,
        });
        Ok(id)
    }

    /// [`Graph::try_node`], panicking with the error's message.
    pub fn node_or_panic(&mut self, op: Op, inputs: &[NodeId], declared: Option<Shape>) -> NodeId {
        self.try_node(op, inputs, declared)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sets the origin of node `id` (used by passes that emit nodes).
    pub fn set_origin(&mut self, id: NodeId, origin: NodeOrigin) {
        if let Some(n) = self.nodes.get_mut(id.index()) {
            n.origin = origin;
        }
    }

    /// Appends a node without inference. For passes that copy already-verified nodes.
    pub fn push_verified(&mut self, node: Node) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        id
    }

    /// The input node named `name`.
    pub fn find_input(&self, name: &str) -> Option<NodeId> {
        self.ids()
            .find(|&i| matches!(&self.node(i).op, Op::Input { name: n } if n == name))
    }

    /// The param node named `name`.
    pub fn find_param(&self, name: &str) -> Option<NodeId> {
        self.ids()
            .find(|&i| matches!(&self.node(i).op, Op::Param { name: n } if n == name))
    }

    /// Inputs in declaration order: (id, name, shape).
    pub fn inputs(&self) -> Vec<(NodeId, &str, &Shape)> {
        self.leaves(|op| match op {
            Op::Input { name } => Some(name),
            _ => None,
        })
    }

    /// Params in declaration order: (id, name, shape).
    pub fn params(&self) -> Vec<(NodeId, &str, &Shape)> {
        self.leaves(|op| match op {
            Op::Param { name } => Some(name),
            _ => None,
        })
    }

    fn leaves<'a>(
        &'a self,
        pick: impl Fn(&'a Op) -> Option<&'a String>,
    ) -> Vec<(NodeId, &'a str, &'a Shape)> {
        self.ids()
            .filter_map(|i| {
                let n = self.node(i);
                pick(&n.op).map(|name| (i, name.as_str(), &n.shape))
            })
            .collect()
    }

    /// Symbols used by any node's shape, sorted.
    pub fn symbols(&self) -> Vec<String> {
        let mut s: Vec<String> = self
            .nodes
            .iter()
            .flat_map(|n| n.shape.symbols().map(str::to_string))
            .collect();
        s.sort();
        s.dedup();
        s
    }

    /// A copy with symbolic dims replaced by their bound sizes, every shape
    /// re-inferred (so a binding that makes an op invalid is an error).
    pub fn bind_dims(&self, bindings: &HashMap<String, usize>) -> Result<Graph, IrError> {
        let mut out = Graph::new(self.name.clone());
        for n in &self.nodes {
            let shape = n.shape.bind(bindings);
            let id = if n.op.is_leaf() {
                out.push_leaf(n.op.clone(), shape)
            } else {
                let declared = ops::needs_declared_shape(&n.op).then_some(shape);
                out.try_node(n.op.clone(), &n.inputs, declared)?
            };
            out.nodes[id.index()].name = n.name.clone();
            out.nodes[id.index()].origin = n.origin.clone();
        }
        out.outputs = self.outputs.clone();
        Ok(out)
    }
}
