//! Layout legalisation: makes implicit layout work explicit for a target
//! that cannot do it inside its kernels.
//!
//! - Without native broadcasting, every operand of an elementwise op
//!   (binary, compare, select, elementwise region, matmul-epilogue extra)
//!   whose dims differ from the result's is routed through an explicit
//!   `broadcast` node, so each elementwise kernel sees equal shapes.
//! - Without strided inputs, a value whose natural layout is strided — the
//!   result of a `transpose`, a `broadcast` (stride 0) or a slice that is not
//!   one contiguous range — is copied to a contiguous buffer before any other
//!   op (or a graph output) reads it. The copy is an identity `transpose`,
//!   the IR's materialising copy.
//!
//! A target that claims both ([`LayoutClaims::NATIVE`], the CPU) gets its
//! graph back unchanged.

use super::pass_error;
use crate::memory::view_range;
use crate::{CompileError, Pass};
use rlx_ir::{Dim, Graph, Node, NodeId, NodeOrigin, Op, Shape};
use std::collections::HashMap;

const PASS: &str = "legalize_layout";

/// The layout capabilities a target claims for its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LayoutClaims {
    /// Elementwise kernels broadcast operands of different dims themselves.
    pub broadcast: bool,
    /// Kernels read strided inputs (transposed, broadcast, strided-slice
    /// views) without a contiguous copy.
    pub strided_inputs: bool,
}

impl LayoutClaims {
    /// Both claims (the CPU backend): legalisation is a no-op.
    pub const NATIVE: LayoutClaims = LayoutClaims {
        broadcast: true,
        strided_inputs: true,
    };
    /// Neither claim: every broadcast and every strided read made explicit.
    pub const NONE: LayoutClaims = LayoutClaims {
        broadcast: false,
        strided_inputs: false,
    };
}

impl Default for LayoutClaims {
    fn default() -> Self {
        LayoutClaims::NATIVE
    }
}

/// Which inputs of `op` broadcast to the node's dims (none for ops that do
/// not broadcast elementwise).
fn broadcast_operands(op: &Op, arity: usize) -> std::ops::Range<usize> {
    match op {
        Op::Binary(_) | Op::Compare(_) | Op::Select | Op::ElementwiseRegion { .. } => 0..arity,
        // a, b, then the epilogue's extras, which broadcast to the result.
        Op::FusedMatMul { .. } => 2.min(arity)..arity,
        // x, w, bias, then the epilogue's extras.
        Op::FusedConv { bias, .. } => rlx_ir::ops::fused_conv::conv_arity(*bias).min(arity)..arity,
        _ => 0..0,
    }
}

/// True when a backend without strided reads must copy `n`'s value.
fn is_strided(g: &Graph, n: &Node) -> bool {
    match &n.op {
        Op::Transpose { perm } => perm.iter().enumerate().any(|(i, &p)| i != p),
        Op::Broadcast => true,
        Op::Slice(_) => view_range(g, n).is_none(),
        _ => false,
    }
}

fn is_copy(n: &Node) -> bool {
    matches!(&n.op, Op::Transpose { perm } if perm.iter().enumerate().all(|(i, &p)| i == p))
}

struct Builder {
    out: Graph,
    /// (value, dims) -> its explicit broadcast.
    broadcasts: HashMap<(NodeId, Vec<Dim>), NodeId>,
    /// value -> its contiguous copy.
    copies: HashMap<NodeId, NodeId>,
}

impl Builder {
    fn push(&mut self, op: Op, input: NodeId, shape: Shape) -> Result<NodeId, CompileError> {
        let id = self
            .out
            .try_node(op, &[input], Some(shape))
            .map_err(pass_error(PASS))?;
        self.out
            .set_origin(id, NodeOrigin::Pass { name: PASS.into() });
        Ok(id)
    }

    fn broadcast(&mut self, x: NodeId, dims: &[Dim]) -> Result<NodeId, CompileError> {
        let key = (x, dims.to_vec());
        if let Some(&b) = self.broadcasts.get(&key) {
            return Ok(b);
        }
        let shape = Shape::from_dims(dims.to_vec(), self.out.shape(x).dtype());
        let b = self.push(Op::Broadcast, x, shape)?;
        self.broadcasts.insert(key, b);
        Ok(b)
    }

    fn contiguous(&mut self, x: NodeId) -> Result<NodeId, CompileError> {
        if !is_strided(&self.out, self.out.node(x)) {
            return Ok(x);
        }
        if let Some(&c) = self.copies.get(&x) {
            return Ok(c);
        }
        let shape = self.out.shape(x).clone();
        let perm = (0..shape.rank()).collect();
        let c = self.push(Op::Transpose { perm }, x, shape)?;
        self.copies.insert(x, c);
        Ok(c)
    }
}

/// Makes the broadcasts and strided reads `claims` does not cover explicit
/// (see the [module docs](self)).
pub fn legalize_layout(g: &Graph, claims: LayoutClaims) -> Result<Graph, CompileError> {
    if claims == LayoutClaims::NATIVE {
        return Ok(g.clone());
    }
    let mut b = Builder {
        out: Graph::new(g.name()),
        broadcasts: HashMap::new(),
        copies: HashMap::new(),
    };
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let mut node = n.clone();
        node.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
        // Layout ops compose strides; everything else (a reshape included)
        // reads a strided value through a contiguous copy.
        let layout_op = is_strided(g, n) || is_copy(n);
        for k in 0..node.inputs.len() {
            if !claims.strided_inputs && !layout_op {
                node.inputs[k] = b.contiguous(node.inputs[k])?;
            }
            if !claims.broadcast
                && broadcast_operands(&n.op, n.inputs.len()).contains(&k)
                && b.out.shape(node.inputs[k]).dims() != n.shape.dims()
            {
                let x = b.broadcast(node.inputs[k], n.shape.dims())?;
                node.inputs[k] = if claims.strided_inputs {
                    x
                } else {
                    b.contiguous(x)?
                };
            }
        }
        map.push(b.out.push_verified(node));
    }
    let mut outputs = Vec::with_capacity(g.outputs().len());
    for o in g.outputs() {
        let id = map[o.index()];
        outputs.push(if claims.strided_inputs {
            id
        } else {
            b.contiguous(id)?
        });
    }
    b.out.set_outputs(outputs);
    Ok(b.out)
}

/// [`legalize_layout`] as a [`Pass`] for a target's [`LayoutClaims`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LegalizeLayout {
    /// What the target claims.
    pub claims: LayoutClaims,
}

impl LegalizeLayout {
    /// The pass for a target claiming `claims`.
    pub fn new(claims: LayoutClaims) -> Self {
        LegalizeLayout { claims }
    }
}

impl Pass for LegalizeLayout {
    fn name(&self) -> &str {
        PASS
    }

    fn run(&self, g: &Graph) -> Result<Graph, CompileError> {
        legalize_layout(g, self.claims)
    }
}
