//! [`GraphScope`]: the graph that [`Tensor`] operations append to.
//!
//! A scope is active on the current thread while its closure runs
//! ([`graph`], [`graph_with`]); scopes nest, and operations always go into
//! the innermost one. A tensor of an outer `graph(..)` scope used inside an
//! inner one is a [`TensorError::ForeignScope`]; a tensor used after its
//! scope ended is a [`TensorError::NoScope`]. Transform scopes (the traces
//! of [`crate::grad`], [`crate::vmap`], ...) may read tensors of the scopes
//! around them: those become *captured* inputs of the trace, treated as
//! constants by the transform (as closed-over values are in JAX).

use crate::error::{Result, TensorError};
use crate::tensor::Tensor;
use rlx_ir::{DType, Graph, HostTensor, NodeId, Shape};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Options of a [`graph_with`] scope.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeOptions {
    /// Name of the graph.
    pub name: String,
    /// Dtype of float tensors created without one (`zeros`, `arange` with
    /// float bounds, `linspace`, ...) and of literals combined with integer
    /// tensors in true division. Default `F32` (JAX without x64).
    pub float_dtype: DType,
    /// Verify the graph ([`rlx_ir::verify_all`]) when the scope ends.
    pub verify: bool,
}

impl Default for ScopeOptions {
    fn default() -> Self {
        ScopeOptions {
            name: "graph".into(),
            float_dtype: DType::F32,
            verify: true,
        }
    }
}

impl ScopeOptions {
    /// Options with this graph name.
    pub fn named(name: impl Into<String>) -> ScopeOptions {
        ScopeOptions {
            name: name.into(),
            ..ScopeOptions::default()
        }
    }
}

/// The state of one scope, shared by its tensors.
pub(crate) struct ScopeData {
    pub(crate) id: u64,
    pub(crate) opts: ScopeOptions,
    pub(crate) graph: RefCell<Graph>,
    /// The first error raised by an operator in this scope.
    pub(crate) error: RefCell<Option<TensorError>>,
    /// Whether tensors of enclosing scopes may be read (transform traces).
    pub(crate) captures_allowed: bool,
    /// Outer tensors read by this trace, with the input standing for each.
    pub(crate) captures: RefCell<Vec<(Tensor, NodeId)>>,
    /// The enclosing scope (for captures).
    pub(crate) parent: Option<Rc<ScopeData>>,
}

thread_local! {
    static STACK: RefCell<Vec<Rc<ScopeData>>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// Name of the `k`th captured input of a trace.
pub(crate) fn capture_name(k: usize) -> String {
    format!("__capture_{k}")
}

impl ScopeData {
    pub(crate) fn new(
        opts: ScopeOptions,
        captures_allowed: bool,
        parent: Option<Rc<ScopeData>>,
    ) -> Rc<ScopeData> {
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        Rc::new(ScopeData {
            id,
            graph: RefCell::new(Graph::new(opts.name.clone())),
            opts,
            error: RefCell::new(None),
            captures_allowed,
            captures: RefCell::new(Vec::new()),
            parent,
        })
    }

    /// Records the first error of the scope.
    pub(crate) fn record(&self, e: &TensorError) {
        let mut slot = self.error.borrow_mut();
        if slot.is_none() {
            *slot = Some(e.clone());
        }
    }

    /// The node standing for `t` in this scope: its own node, or (in a
    /// transform trace) a captured input for a tensor of an enclosing scope.
    pub(crate) fn resolve(self: &Rc<Self>, t: &Tensor, op: &str) -> Result<NodeId> {
        let (owner, id, shape) = t.parts()?;
        if owner.id == self.id {
            return Ok(id);
        }
        let visible = self.captures_allowed
            && std::iter::successors(self.parent.clone(), |p| p.parent.clone())
                .any(|p| p.id == owner.id);
        if !visible {
            return Err(TensorError::ForeignScope {
                op: op.into(),
                owner: owner.opts.name.clone(),
                owner_id: owner.id,
                current: self.opts.name.clone(),
                current_id: self.id,
            });
        }
        if let Some((_, node)) = self.captures.borrow().iter().find(|(c, _)| c.same_node(t)) {
            return Ok(*node);
        }
        let k = self.captures.borrow().len();
        let node = self
            .graph
            .borrow_mut()
            .try_input(&capture_name(k), shape.clone())
            .map_err(|e| TensorError::ir(op, e))?;
        self.captures.borrow_mut().push((t.clone(), node));
        Ok(node)
    }
}

/// The innermost active scope of this thread.
pub(crate) fn current() -> Option<Rc<ScopeData>> {
    STACK.with(|s| s.borrow().last().cloned())
}

/// The innermost active scope; with no scope active, the thread's eager
/// scope (feature `eval`) or [`TensorError::NoScope`].
pub(crate) fn current_or(op: &str) -> Result<Rc<ScopeData>> {
    if let Some(s) = current() {
        return Ok(s);
    }
    #[cfg(feature = "eval")]
    {
        let _ = op;
        Ok(crate::eager::scope())
    }
    #[cfg(not(feature = "eval"))]
    Err(TensorError::NoScope { op: op.into() })
}

/// Pops the scope when dropped (also on unwinding).
struct Active(u64);

impl Active {
    fn push(data: &Rc<ScopeData>) -> Active {
        STACK.with(|s| s.borrow_mut().push(data.clone()));
        Active(data.id)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(pos) = s.iter().rposition(|d| d.id == self.0) {
                s.remove(pos);
            }
        });
    }
}

/// The handle a [`graph`] closure receives: declares inputs, params and
/// constants of the graph being built.
pub struct GraphScope {
    data: Rc<ScopeData>,
}

impl GraphScope {
    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.data.opts.name
    }

    /// This scope's options.
    pub fn options(&self) -> &ScopeOptions {
        &self.data.opts
    }

    /// A named graph input (a failed tensor on a duplicate name).
    pub fn input(&self, name: &str, shape: Shape) -> Tensor {
        Tensor::sticky(self.try_input(name, shape))
    }

    /// [`GraphScope::input`], returning the error.
    pub fn try_input(&self, name: &str, shape: Shape) -> Result<Tensor> {
        let id = self
            .data
            .graph
            .borrow_mut()
            .try_input(name, shape.clone())
            .map_err(|e| TensorError::ir("input", e))?;
        Ok(Tensor::node(&self.data, id, shape))
    }

    /// A named parameter (weights, set after compiling with `set_param`).
    pub fn param(&self, name: &str, shape: Shape) -> Tensor {
        Tensor::sticky(self.try_param(name, shape))
    }

    /// [`GraphScope::param`], returning the error.
    pub fn try_param(&self, name: &str, shape: Shape) -> Result<Tensor> {
        let id = self
            .data
            .graph
            .borrow_mut()
            .try_param(name, shape.clone())
            .map_err(|e| TensorError::ir("param", e))?;
        Ok(Tensor::node(&self.data, id, shape))
    }

    /// A constant holding `t`.
    pub fn constant(&self, t: &HostTensor) -> Tensor {
        let id = self.data.graph.borrow_mut().constant_tensor(t);
        Tensor::node(&self.data, id, t.shape())
    }

    /// An `F32` constant of `dims` from row-major values.
    pub fn constant_f32(&self, values: &[f32], dims: &[usize]) -> Tensor {
        Tensor::sticky(
            HostTensor::from_slice(values, dims)
                .map(|t| self.constant(&t))
                .map_err(|e| TensorError::ir("constant_f32", e)),
        )
    }

    /// The first error an operator raised in this scope so far.
    pub fn error(&self) -> Option<TensorError> {
        self.data.error.borrow().clone()
    }
}

/// What a scope closure returns: the graph's outputs.
pub trait Outputs {
    /// The output tensors, in order.
    fn into_tensors(self) -> Vec<Tensor>;
}

impl Outputs for Tensor {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self]
    }
}

impl Outputs for &Tensor {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.clone()]
    }
}

impl Outputs for Vec<Tensor> {
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
}

impl<const N: usize> Outputs for [Tensor; N] {
    fn into_tensors(self) -> Vec<Tensor> {
        self.into()
    }
}

impl Outputs for (Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1]
    }
}

impl Outputs for (Tensor, Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1, self.2]
    }
}

/// Builds a graph named `name` from a closure over [`Tensor`]s; the
/// closure's result becomes the graph's outputs.
///
/// Returns the first error any operator of the closure raised (operators
/// cannot return `Result`s; see [`TensorError`]).
///
/// ```
/// use rlx_tensor::{graph, shape};
/// let g = graph("affine", |g| {
///     let x = g.input("x", shape![2, 3]);
///     let w = g.param("w", shape![3, 4]);
///     (x.matmul(&w) + 1.0).relu()
/// })
/// .unwrap();
/// assert_eq!(g.outputs().len(), 1);
/// ```
pub fn graph<O: Outputs>(name: &str, f: impl FnOnce(&GraphScope) -> O) -> Result<Graph> {
    graph_with(ScopeOptions::named(name), f)
}

/// [`graph`] with [`ScopeOptions`].
pub fn graph_with<O: Outputs>(
    opts: ScopeOptions,
    f: impl FnOnce(&GraphScope) -> O,
) -> Result<Graph> {
    let verify = opts.verify;
    let data = ScopeData::new(opts, false, current());
    let outs = run_in(&data, || {
        f(&GraphScope { data: data.clone() }).into_tensors()
    });
    let g = finish(&data, &outs, "graph outputs")?;
    if verify {
        let errs = rlx_ir::verify_all(&g);
        if let Some(e) = errs.first() {
            return Err(TensorError::invalid(
                "graph",
                format!("the built graph does not verify: {e}"),
            ));
        }
    }
    Ok(g)
}

/// Runs `f` with `data` active.
pub(crate) fn run_in<R>(data: &Rc<ScopeData>, f: impl FnOnce() -> R) -> R {
    let _active = Active::push(data);
    f()
}

/// A fresh trace scope under the current one (captures allowed).
pub(crate) fn trace_scope(name: &str) -> Rc<ScopeData> {
    let opts = ScopeOptions {
        name: name.into(),
        float_dtype: current().map(|c| c.opts.float_dtype).unwrap_or(DType::F32),
        verify: false,
    };
    ScopeData::new(opts, true, current_or("trace").ok())
}

/// Sets the outputs and takes the graph out of a finished scope.
pub(crate) fn finish(data: &Rc<ScopeData>, outs: &[Tensor], op: &str) -> Result<Graph> {
    if let Some(e) = data.error.borrow().clone() {
        return Err(e);
    }
    let ids = outs
        .iter()
        .map(|t| data.resolve(t, op))
        .collect::<Result<Vec<_>>>()?;
    let mut g = data.graph.borrow().clone();
    g.set_outputs(ids);
    Ok(g)
}
