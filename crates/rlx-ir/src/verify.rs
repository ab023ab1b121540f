//! Graph verification: structure ([`verify`]), shapes ([`verify_shapes`]), both ([`verify_all`]).

use crate::{ops, Graph, NodeId, Op};
use std::collections::HashSet;
use std::fmt;

/// One problem found in a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The node at fault, if the problem is local to one.
    pub node: Option<NodeId>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.node {
            Some(n) => write!(f, "{n}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for VerifyError {}

fn err(node: Option<NodeId>, message: String) -> VerifyError {
    VerifyError { node, message }
}

/// Structural checks: inputs refer to earlier nodes, outputs exist, input and
/// param names are unique, constants hold the right number of bytes.
pub fn verify(g: &Graph) -> Vec<VerifyError> {
    let mut errors = Vec::new();
    let mut inputs = HashSet::new();
    let mut params = HashSet::new();
    for id in g.ids() {
        let n = g.node(id);
        for &i in &n.inputs {
            if i >= id {
                errors.push(err(
                    Some(id),
                    format!("{}: input {i} is not an earlier node", n.op.mnemonic()),
                ));
            }
        }
        match &n.op {
            Op::Input { name } if !inputs.insert(name.clone()) => {
                errors.push(err(Some(id), format!("duplicate input name \"{name}\"")))
            }
            Op::Param { name } if !params.insert(name.clone()) => {
                errors.push(err(Some(id), format!("duplicate param name \"{name}\"")))
            }
            Op::Constant { bytes } => match n.shape.size_bytes() {
                Some(sz) if sz == bytes.len() => {}
                Some(sz) => errors.push(err(
                    Some(id),
                    format!(
                        "constant of {} holds {} bytes, needs {sz}",
                        n.shape,
                        bytes.len()
                    ),
                )),
                None => errors.push(err(
                    Some(id),
                    format!("constant of symbolic shape {}", n.shape),
                )),
            },
            _ => {}
        }
    }
    if g.outputs().is_empty() {
        errors.push(err(
            None,
            "the graph has no outputs (call set_outputs)".into(),
        ));
    }
    for &o in g.outputs() {
        if o.index() >= g.len() {
            errors.push(err(
                None,
                format!(
                    "output {o} does not exist (the graph has {} nodes)",
                    g.len()
                ),
            ));
        }
    }
    errors
}

/// Re-runs shape inference on every node and reports disagreements.
/// Nodes with dangling inputs are skipped (reported by [`verify`]).
pub fn verify_shapes(g: &Graph) -> Vec<VerifyError> {
    let mut errors = Vec::new();
    for id in g.ids() {
        let n = g.node(id);
        if n.op.is_leaf() || n.inputs.iter().any(|&i| i >= id) {
            continue;
        }
        let shapes: Vec<_> = n.inputs.iter().map(|&i| g.shape(i)).collect();
        match ops::infer_shape(&n.op, &shapes, Some(&n.shape)) {
            Ok(s) if s == n.shape => {}
            Ok(s) => errors.push(err(
                Some(id),
                format!(
                    "{}: stored shape {} but inference gives {s}",
                    n.op.mnemonic(),
                    n.shape
                ),
            )),
            Err(e) => errors.push(err(Some(id), format!("{}: {e}", n.op.mnemonic()))),
        }
        if let Some(e) = ops::control::check_tuple_get(g, id) {
            errors.push(err(Some(id), e));
        }
    }
    errors
}

/// [`verify`] then [`verify_shapes`].
pub fn verify_all(g: &Graph) -> Vec<VerifyError> {
    let mut e = verify(g);
    e.extend(verify_shapes(g));
    e
}
