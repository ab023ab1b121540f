//! [`Tensor`]: a symbolic handle to a node of the active scope's graph.

use crate::error::{Result, TensorError};
use crate::scope::{current, current_or, ScopeData};
use rlx_ir::{DType, Dim, Graph, NodeId, Op, Shape};
use std::fmt;
use std::rc::Rc;

enum Repr {
    Node {
        scope: Rc<ScopeData>,
        id: NodeId,
        shape: Shape,
    },
    Failed(TensorError),
}

/// A symbolic tensor: a node of the graph of a [`crate::GraphScope`].
///
/// Cheap to clone (a shared handle). Operators (`+ - * /`, unary `-`) and
/// methods append nodes to the innermost active scope of the thread and
/// check shapes when they are built (numpy broadcasting; the error names
/// the op and both shapes). An operator cannot return a `Result`: on error
/// it returns a *failed* tensor ([`Tensor::error`]) that carries the error
/// into everything computed from it, and the scope records the first error,
/// which [`crate::graph`] returns. Every fallible method has a `try_` form
/// that returns the error at once.
#[derive(Clone)]
pub struct Tensor {
    repr: Rc<Repr>,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.repr {
            Repr::Node { scope, id, shape } => {
                write!(f, "Tensor({shape} at {id:?} of \"{}\")", scope.opts.name)
            }
            Repr::Failed(e) => write!(f, "Tensor(failed: {e})"),
        }
    }
}

impl Tensor {
    pub(crate) fn node(scope: &Rc<ScopeData>, id: NodeId, shape: Shape) -> Tensor {
        Tensor {
            repr: Rc::new(Repr::Node {
                scope: scope.clone(),
                id,
                shape,
            }),
        }
    }

    /// A failed tensor carrying `e`.
    pub(crate) fn failed(e: TensorError) -> Tensor {
        Tensor {
            repr: Rc::new(Repr::Failed(e)),
        }
    }

    /// The tensor, or a failed tensor whose error is recorded in the active scope.
    pub(crate) fn sticky(r: Result<Tensor>) -> Tensor {
        match r {
            Ok(t) => t,
            Err(e) => {
                if let Some(s) = current() {
                    s.record(&e);
                }
                Tensor::failed(e)
            }
        }
    }

    /// [`Tensor::sticky`] of a fallible builder.
    pub(crate) fn sticky_with(f: impl FnOnce() -> Result<Tensor>) -> Tensor {
        Tensor::sticky(f())
    }

    pub(crate) fn parts(&self) -> Result<(&Rc<ScopeData>, NodeId, &Shape)> {
        match &*self.repr {
            Repr::Node { scope, id, shape } => Ok((scope, *id, shape)),
            Repr::Failed(e) => Err(e.clone()),
        }
    }

    pub(crate) fn same_node(&self, other: &Tensor) -> bool {
        match (&*self.repr, &*other.repr) {
            (
                Repr::Node {
                    scope: a, id: x, ..
                },
                Repr::Node {
                    scope: b, id: y, ..
                },
            ) => a.id == b.id && x == y,
            _ => false,
        }
    }

    /// The error this tensor carries, if an operation that made it failed.
    pub fn error(&self) -> Option<&TensorError> {
        match &*self.repr {
            Repr::Failed(e) => Some(e),
            Repr::Node { .. } => None,
        }
    }

    /// `Ok(self)`, or the error a failed tensor carries.
    pub fn check(&self) -> Result<&Tensor> {
        self.parts().map(|_| self)
    }

    /// Its shape (a rank-0 `F32` placeholder for a failed tensor).
    pub fn shape(&self) -> Shape {
        match &*self.repr {
            Repr::Node { shape, .. } => shape.clone(),
            Repr::Failed(_) => Shape::scalar(DType::F32),
        }
    }

    /// Its dims as numbers (`None` when symbolic or failed).
    pub fn dims(&self) -> Option<Vec<usize>> {
        self.parts().ok().and_then(|(_, _, s)| s.static_dims())
    }

    /// Its dtype.
    pub fn dtype(&self) -> DType {
        self.shape().dtype()
    }

    /// Its rank (`ndim`).
    pub fn ndim(&self) -> usize {
        self.shape().rank()
    }

    /// Its element count (`None` when symbolic).
    pub fn size(&self) -> Option<usize> {
        self.shape().numel()
    }

    /// The node id in its scope's graph.
    pub fn id(&self) -> Result<NodeId> {
        self.parts().map(|(_, id, _)| id)
    }

    /// Appends a node to the active scope: `f` gets the graph and the
    /// inputs resolved in it.
    pub(crate) fn build(
        op: &str,
        inputs: &[&Tensor],
        f: impl FnOnce(&mut Graph, &[NodeId], &[Shape]) -> Result<NodeId>,
    ) -> Result<Tensor> {
        for t in inputs {
            t.check()?;
        }
        let scope = current_or(op)?;
        let ids = inputs
            .iter()
            .map(|t| scope.resolve(t, op))
            .collect::<Result<Vec<_>>>()?;
        let shapes: Vec<Shape> = inputs.iter().map(|t| t.shape()).collect();
        let mut g = scope.graph.borrow_mut();
        let id = f(&mut g, &ids, &shapes)?;
        let shape = g.shape(id).clone();
        drop(g);
        Ok(Tensor::node(&scope, id, shape))
    }

    /// A node `op` over `inputs` with the IR's shape rule (or `declared`).
    pub(crate) fn op(
        name: &str,
        op: Op,
        inputs: &[&Tensor],
        declared: Option<Shape>,
    ) -> Result<Tensor> {
        Tensor::build(name, inputs, |g, ids, _| {
            g.try_node(op, ids, declared)
                .map_err(|e| TensorError::ir(name, e))
        })
    }

    /// A nullary node of the active scope (constants, iota).
    pub(crate) fn leaf(name: &str, f: impl FnOnce(&mut Graph) -> Result<NodeId>) -> Result<Tensor> {
        Tensor::build(name, &[], |g, _, _| f(g))
    }

    /// The float dtype of the active scope (`F32` by default).
    pub(crate) fn float_dtype() -> DType {
        current().map(|s| s.opts.float_dtype).unwrap_or(DType::F32)
    }
}

/// numpy broadcasting of two shapes; the error names `op` and both shapes.
pub fn broadcast_shapes(op: &str, a: &Shape, b: &Shape) -> Result<Vec<Dim>> {
    let (ra, rb) = (a.rank(), b.rank());
    let r = ra.max(rb);
    let mut out = Vec::with_capacity(r);
    for i in 0..r {
        let da = (i + ra >= r).then(|| &a.dims()[i + ra - r]);
        let db = (i + rb >= r).then(|| &b.dims()[i + rb - r]);
        let d = match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(x), Some(y)) if x == y => x.clone(),
            (Some(Dim::Static(1)), Some(y)) => y.clone(),
            (Some(x), Some(Dim::Static(1))) => x.clone(),
            _ => {
                return Err(TensorError::Broadcast {
                    op: op.into(),
                    lhs: a.clone(),
                    rhs: b.clone(),
                })
            }
        };
        out.push(d);
    }
    Ok(out)
}

/// JAX's promotion (x64 off): a float meets an int or bool as the float;
/// otherwise numpy's table.
pub fn promote_types(a: DType, b: DType) -> DType {
    match (a.is_float(), b.is_float()) {
        (true, false) if !b.is_complex() => a,
        (false, true) if !a.is_complex() => b,
        _ => a.promote(b),
    }
}
