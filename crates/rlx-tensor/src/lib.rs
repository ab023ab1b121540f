//! # rlx-tensor
//!
//! Write RLX graphs like `jax.numpy`: a [`Tensor`] is a symbolic handle to
//! a node of the graph of the active [`GraphScope`]; operators, methods and
//! the [`np`] / [`nn`] functions append nodes with numpy's broadcasting and
//! JAX's dtype promotion, checking shapes as they are built. The graph is
//! an ordinary [`rlx_ir::Graph`] (no second IR): compile it with
//! `rlx_runtime::Session`, transform it, inspect it.
//!
//! ```
//! use rlx_tensor::{graph, nn, np, s, shape};
//!
//! let g = graph("mlp", |g| {
//!     let x = g.input("x", shape![8, 4]);
//!     let w = g.param("w", shape![4, 3]);
//!     let b = g.param("b", shape![3]);
//!     let h = (x.matmul(&w) + &b).relu();      // [8, 3], bias broadcast
//!     let p = nn::softmax(&h, -1);
//!     np::mean(&p.at(s![.., ..2]), 0, true)   // [1, 2]
//! })
//! .unwrap();
//! assert_eq!(g.outputs().len(), 1);
//! ```
//!
//! ## Errors
//!
//! An operator cannot return a `Result`. A failed operation (shapes that
//! do not broadcast, an axis out of range, a tensor used outside its
//! scope, ...) returns a *failed* tensor carrying a [`TensorError`], which
//! flows into everything computed from it, and the scope records the first
//! error: [`graph`] returns it instead of a graph. Never a panic. For an
//! immediate `Result`, use the `try_` methods ([`Tensor::try_add`],
//! [`Tensor::try_matmul`], [`Tensor::try_at`], ...), [`Tensor::check`], or
//! wrap any expression in [`attempt`].
//!
//! ## Scopes
//!
//! [`graph`] / [`graph_with`] run a closure with a new scope active on the
//! thread; scopes nest and operations go to the innermost one. A tensor of
//! an outer `graph` used in an inner one is a [`TensorError::ForeignScope`];
//! a tensor used after its closure returned is a [`TensorError::NoScope`].
//! Transforms ([`grad`], [`vmap`], ...) trace in scopes that may read the
//! tensors around them.
//!
//! ## Indexing
//!
//! [`s!`] is numpy basic indexing (`x.at(s![.., 1..4, ..;2])`, negative
//! indices, `None` for a new axis, `...`); [`ix`], [`rg`], [`ax`], [`tail`]
//! build entries as functions. [`shape!`] builds a [`Shape`].
//!
//! ## Eager mode (feature `eval`)
//!
//! With no scope active, operations go to the thread's *eager* scope;
//! [`Tensor::from_vec`] makes a tensor there and `to_vec` / `item` /
//! `to_host` evaluate it: the sub-graph the value needs is compiled once per
//! structure (ops and shapes; constants are fed as inputs) and cached per
//! thread, so a repeated eager expression costs one compiled run.
//!
//! ## Coverage
//!
//! `docs/tensor-coverage.md` lists the `jax.numpy` names [`np`] provides
//! (regenerate with `tools/gen_tensor_coverage.py`).
#![deny(missing_docs)]

mod creation;
#[cfg(feature = "eval")]
mod eager;
mod elementwise;
mod error;
mod index;
mod lang;
mod linalg;
mod model;
mod movement;
pub mod nn;
pub mod np;
mod np_ext;
mod operators;
mod reduce;
mod scope;
mod tensor;
#[cfg(feature = "optim")]
pub mod train;
mod transform;

pub use creation::{full, iota, ones, scalar, try_full, try_scalar, zeros};
#[cfg(feature = "eval")]
pub use eager::{eager_cache_stats, reset_eager};
pub use elementwise::Arg;
pub use error::{Result, TensorError};
#[doc(hidden)]
pub use index::__stepped;
pub use index::{ax, ix, rg, tail, IntoSliceItem, SliceItem, SliceSpec, NEW_AXIS};
#[doc(hidden)]
pub use lang::__lang;
pub use linalg::{einsum, try_einsum};
pub use model::{call_forward, Forward, Model, ModelDef};
pub use reduce::Axes;
pub use rlx_ir::HostTensor;
pub use rlx_ir::{DType, Dim, Graph, Shape};
pub use scope::{graph, graph_with, GraphScope, Outputs, ScopeOptions};
pub use tensor::{broadcast_shapes, promote_types, Tensor};
#[cfg(feature = "optim")]
pub use train::{train_step, train_step_with, StepOutput, TrainStep};
pub use transform::{
    grad, grad_argnums, hvp, jit, jit_with, jvp, try_hvp, try_jvp, try_vmap, value_and_grad, vmap,
    Jit, JitOptions, TraceFn,
};

/// Runs `f` and returns its tensor, or the first error any operation in it
/// raised; that error is not left recorded in the scope.
///
/// ```
/// use rlx_tensor::{attempt, graph, shape, TensorError};
/// let g = graph("g", |g| {
///     let a = g.input("a", shape![2, 3]);
///     let b = g.input("b", shape![4]);
///     let bad = attempt(|| &a + &b);
///     assert!(matches!(bad, Err(TensorError::Broadcast { .. })));
///     a
/// });
/// assert!(g.is_ok());
/// ```
pub fn attempt(f: impl FnOnce() -> Tensor) -> Result<Tensor> {
    let scope = scope_current();
    let before = scope.as_ref().and_then(|s| s.error.borrow_mut().take());
    let t = f();
    let raised = match &scope {
        Some(s) => std::mem::replace(&mut *s.error.borrow_mut(), before),
        None => None,
    };
    if let Some(e) = t.error() {
        return Err(e.clone());
    }
    match raised {
        Some(e) => Err(e),
        None => Ok(t),
    }
}

fn scope_current() -> Option<std::rc::Rc<scope::ScopeData>> {
    scope::current()
}

#[doc(hidden)]
#[macro_export]
macro_rules! __dim {
    ($n:literal) => {
        $crate::Dim::Static($n)
    };
    ($s:ident) => {
        $crate::Dim::sym(stringify!($s))
    };
    ($n:expr) => {
        $crate::Dim::Static($n)
    };
}

/// Builds a [`Shape`]: `shape![2, 3]` (`F32`), `shape![I32; 4]`, and
/// symbolic dims by name: `shape![batch, 128]`. Use `(expr)` for a
/// computed size: `shape![(n + 1), 4]`.
///
/// ```
/// use rlx_tensor::{shape, DType, Dim};
/// assert_eq!(shape![2, 3].dims(), &[Dim::Static(2), Dim::Static(3)]);
/// assert_eq!(shape![I64; 5].dtype(), DType::I64);
/// assert!(!shape![batch, 8].is_static());
/// assert_eq!(shape![].rank(), 0);
/// ```
#[macro_export]
macro_rules! shape {
    () => {
        $crate::Shape::scalar($crate::DType::F32)
    };
    ($dt:ident ; $($d:tt),* $(,)?) => {
        $crate::Shape::from_dims(vec![$($crate::__dim!($d)),*], $crate::DType::$dt)
    };
    ($($d:tt),+ $(,)?) => {
        $crate::Shape::from_dims(vec![$($crate::__dim!($d)),+], $crate::DType::F32)
    };
}
