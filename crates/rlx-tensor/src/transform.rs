//! Function transforms over Rust closures of [`Tensor`]s, JAX style:
//! [`grad`], [`value_and_grad`], [`jvp`], [`hvp`], [`vmap`], [`jit`].
//!
//! A transform traces the closure once into a sub-graph (inputs `arg0`,
//! `arg1`, ... of the argument shapes; tensors of enclosing scopes the
//! closure reads become extra inputs, held constant), applies the graph
//! transform of [`rlx_autodiff`] to it, and inlines the result into the
//! active scope with the real arguments bound. There is no second autodiff:
//! the derivatives are `rlx_autodiff`'s.
//!
//! Closures take `&Tensor` arguments (one to three) or a slice
//! `&[Tensor]`, and return a [`Tensor`] or several ([`Outputs`]); the
//! transformed function takes `&[&Tensor]`. Annotate closure arguments
//! (`|x: &Tensor| ...`) so the arity is known.

use crate::error::{Result, TensorError};
use crate::scope::{capture_name, current_or, finish, run_in, trace_scope, Outputs, ScopeOptions};
use crate::tensor::Tensor;
use rlx_autodiff::GradWithLossOptions;
use rlx_ir::{Graph, HostTensor, NodeId, Op, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, Device, Session};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::marker::PhantomData;

/// A closure a transform can trace. Implemented for `Fn(&Tensor) -> O`,
/// `Fn(&Tensor, &Tensor) -> O`, `Fn(&Tensor, &Tensor, &Tensor) -> O` and
/// `Fn(&[Tensor]) -> O`, `Fn(&[&Tensor]) -> O` (what the transforms
/// return, so they compose: `vmap(grad(f))`) where `O: Outputs`; `M` only tells the impls apart.
pub trait TraceFn<M> {
    /// The number of arguments, when fixed.
    fn arity(&self) -> Option<usize>;
    /// Calls the closure.
    fn call_traced(&self, args: &[Tensor]) -> Vec<Tensor>;
}

impl<F: Fn(&Tensor) -> O, O: Outputs> TraceFn<(Tensor,)> for F {
    fn arity(&self) -> Option<usize> {
        Some(1)
    }
    fn call_traced(&self, a: &[Tensor]) -> Vec<Tensor> {
        self(&a[0]).into_tensors()
    }
}

impl<F: Fn(&Tensor, &Tensor) -> O, O: Outputs> TraceFn<(Tensor, Tensor)> for F {
    fn arity(&self) -> Option<usize> {
        Some(2)
    }
    fn call_traced(&self, a: &[Tensor]) -> Vec<Tensor> {
        self(&a[0], &a[1]).into_tensors()
    }
}

impl<F: Fn(&Tensor, &Tensor, &Tensor) -> O, O: Outputs> TraceFn<(Tensor, Tensor, Tensor)> for F {
    fn arity(&self) -> Option<usize> {
        Some(3)
    }
    fn call_traced(&self, a: &[Tensor]) -> Vec<Tensor> {
        self(&a[0], &a[1], &a[2]).into_tensors()
    }
}

impl<F: Fn(&[Tensor]) -> O, O: Outputs> TraceFn<Vec<Tensor>> for F {
    fn arity(&self) -> Option<usize> {
        None
    }
    fn call_traced(&self, a: &[Tensor]) -> Vec<Tensor> {
        self(a).into_tensors()
    }
}

impl<F: Fn(&[&Tensor]) -> O, O: Outputs> TraceFn<Vec<&'static Tensor>> for F {
    fn arity(&self) -> Option<usize> {
        None
    }
    fn call_traced(&self, a: &[Tensor]) -> Vec<Tensor> {
        let refs: Vec<&Tensor> = a.iter().collect();
        self(&refs).into_tensors()
    }
}

/// Name of the `i`th argument input of a trace.
fn arg_name(i: usize) -> String {
    format!("arg{i}")
}

/// A closure traced into a graph.
struct Traced {
    graph: Graph,
    args: Vec<NodeId>,
    captures: Vec<Tensor>,
}

fn trace<M, F: TraceFn<M> + ?Sized>(name: &str, f: &F, shapes: &[Shape]) -> Result<Traced> {
    if let Some(n) = f.arity() {
        if n != shapes.len() {
            return Err(TensorError::invalid(
                name,
                format!("the function takes {n} arguments, given {}", shapes.len()),
            ));
        }
    }
    let data = trace_scope(name);
    let mut args = Vec::with_capacity(shapes.len());
    let mut tensors = Vec::with_capacity(shapes.len());
    for (i, s) in shapes.iter().enumerate() {
        let id = data
            .graph
            .borrow_mut()
            .try_input(&arg_name(i), s.clone())
            .map_err(|e| TensorError::ir(name, e))?;
        args.push(id);
        tensors.push(Tensor::node(&data, id, s.clone()));
    }
    let outs = run_in(&data, || f.call_traced(&tensors));
    let graph = finish(&data, &outs, name)?;
    let captures = data
        .captures
        .borrow()
        .iter()
        .map(|(t, _)| t.clone())
        .collect();
    Ok(Traced {
        graph,
        args,
        captures,
    })
}

/// Copies `g` into the active scope, binding its inputs by name; returns
/// its outputs.
fn inline(op: &str, g: &Graph, bind: &HashMap<String, Tensor>) -> Result<Vec<Tensor>> {
    let scope = current_or(op)?;
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let id = match &n.op {
            Op::Input { name } => {
                let t = bind.get(name).ok_or_else(|| {
                    TensorError::invalid(
                        op,
                        format!("the transformed graph has an unbound input \"{name}\""),
                    )
                })?;
                scope.resolve(t, op)?
            }
            Op::Param { name } => {
                let existing = scope.graph.borrow().find_param(name);
                match existing {
                    Some(p) => p,
                    None => scope
                        .graph
                        .borrow_mut()
                        .try_param(name, n.shape.clone())
                        .map_err(|e| TensorError::ir(op, e))?,
                }
            }
            Op::Constant { bytes } => scope
                .graph
                .borrow_mut()
                .try_constant_bytes(bytes.clone(), n.shape.clone())
                .map_err(|e| TensorError::ir(op, e))?,
            other => {
                let ins: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
                scope
                    .graph
                    .borrow_mut()
                    .try_node(other.clone(), &ins, Some(n.shape.clone()))
                    .map_err(|e| TensorError::ir(op, e))?
            }
        };
        map.push(id);
    }
    let g2 = scope.graph.borrow();
    Ok(g.outputs()
        .iter()
        .map(|o| {
            let id = map[o.index()];
            Tensor::node(&scope, id, g2.shape(id).clone())
        })
        .collect())
}

fn bindings(t: &Traced, args: &[&Tensor]) -> HashMap<String, Tensor> {
    let mut b: HashMap<String, Tensor> = args
        .iter()
        .enumerate()
        .map(|(i, a)| (arg_name(i), (*a).clone()))
        .collect();
    for (k, c) in t.captures.iter().enumerate() {
        b.insert(capture_name(k), c.clone());
    }
    b
}

fn shapes_of(args: &[&Tensor]) -> Result<Vec<Shape>> {
    args.iter().map(|a| a.check().map(|t| t.shape())).collect()
}

fn ad(transform: &'static str) -> impl Fn(rlx_autodiff::AutodiffError) -> TensorError {
    move |source| TensorError::Autodiff {
        transform,
        source: Box::new(source),
    }
}

/// `[value, grads...]` of `f` at `args` with respect to `argnums`.
fn value_and_grads<M, F: TraceFn<M> + ?Sized>(
    f: &F,
    args: &[&Tensor],
    argnums: &[usize],
) -> Result<(Tensor, Vec<Tensor>)> {
    let t = trace("grad", f, &shapes_of(args)?)?;
    let outs = t.graph.outputs();
    let loss = *outs
        .first()
        .ok_or_else(|| TensorError::invalid("grad", "the function returned nothing"))?;
    if t.graph.shape(loss).numel() != Some(1) {
        return Err(TensorError::invalid(
            "grad",
            format!(
                "needs a scalar output, the function returned {}",
                t.graph.shape(loss)
            ),
        ));
    }
    let mut wrt = Vec::with_capacity(argnums.len());
    for &i in argnums {
        wrt.push(*t.args.get(i).ok_or_else(|| {
            TensorError::invalid(
                "grad",
                format!("argnum {i} but the function has {} arguments", args.len()),
            )
        })?);
    }
    let mut g = t.graph.clone();
    g.set_outputs(vec![loss]);
    let d = rlx_autodiff::grad_with_loss_opts(&g, &wrt, &GradWithLossOptions::TRAINING)
        .map_err(ad("grad"))?;
    let mut out = inline("grad", &d, &bindings(&t, args))?;
    let grads = out.split_off(1);
    let value = out.pop().expect("the loss");
    // A scalar loss of shape [1] etc. keeps its shape; grads match the args.
    Ok((value, grads.into_iter().take(argnums.len()).collect()))
}

/// `jax.grad(f)`: the gradient of the scalar `f` with respect to its first argument.
///
/// ```
/// use rlx_tensor::{graph, grad, shape, Tensor};
/// let g = graph("g", |s| {
///     let x = s.input("x", shape![3]);
///     grad(|x: &Tensor| (x * x).sum(None, false))(&[&x]) // 2x
/// });
/// assert!(g.is_ok());
/// ```
pub fn grad<M, F: TraceFn<M>>(f: F) -> impl Fn(&[&Tensor]) -> Tensor {
    move |args: &[&Tensor]| {
        Tensor::sticky(value_and_grads(&f, args, &[0]).map(|(_, mut g)| g.remove(0)))
    }
}

/// `jax.grad(f, argnums)`: gradients with respect to several arguments.
pub fn grad_argnums<M, F: TraceFn<M>>(
    f: F,
    argnums: &[usize],
) -> impl Fn(&[&Tensor]) -> Vec<Tensor> {
    let argnums = argnums.to_vec();
    move |args: &[&Tensor]| match value_and_grads(&f, args, &argnums) {
        Ok((_, g)) => g,
        Err(e) => argnums
            .iter()
            .map(|_| Tensor::sticky(Err(e.clone())))
            .collect(),
    }
}

/// `jax.value_and_grad(f)`: `(f(x), df/dx)` for the first argument.
pub fn value_and_grad<M, F: TraceFn<M>>(f: F) -> impl Fn(&[&Tensor]) -> (Tensor, Tensor) {
    move |args: &[&Tensor]| match value_and_grads(&f, args, &[0]) {
        Ok((v, mut g)) => (v, g.remove(0)),
        Err(e) => (Tensor::sticky(Err(e.clone())), Tensor::failed(e)),
    }
}

/// `jax.jvp(f, primals, tangents)`: `(f(primals), J·tangents)` for every output.
pub fn jvp<M, F: TraceFn<M>>(
    f: F,
    primals: &[&Tensor],
    tangents: &[&Tensor],
) -> (Vec<Tensor>, Vec<Tensor>) {
    match try_jvp(&f, primals, tangents) {
        Ok(r) => r,
        Err(e) => (
            vec![Tensor::sticky(Err(e.clone()))],
            vec![Tensor::failed(e)],
        ),
    }
}

/// [`jvp`], returning the error.
pub fn try_jvp<M, F: TraceFn<M> + ?Sized>(
    f: &F,
    primals: &[&Tensor],
    tangents: &[&Tensor],
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    check_tangents("jvp", primals, tangents)?;
    let t = trace("jvp", f, &shapes_of(primals)?)?;
    let n_out = t.graph.outputs().len();
    let j = rlx_autodiff::jvp(&t.graph, &t.args).map_err(ad("jvp"))?;
    let mut b = bindings(&t, primals);
    for (i, v) in tangents.iter().enumerate() {
        b.insert(
            format!("{}{}", rlx_autodiff::TANGENT_PREFIX, arg_name(i)),
            (*v).clone(),
        );
    }
    let mut outs = inline("jvp", &j, &b)?;
    let tans = outs.split_off(n_out);
    Ok((outs, tans))
}

fn check_tangents(op: &str, primals: &[&Tensor], tangents: &[&Tensor]) -> Result<()> {
    if primals.len() != tangents.len() {
        return Err(TensorError::invalid(
            op,
            format!("{} primals but {} tangents", primals.len(), tangents.len()),
        ));
    }
    for (p, v) in primals.iter().zip(tangents) {
        p.check()?;
        v.check()?;
        if p.shape() != v.shape() {
            return Err(TensorError::invalid(
                op,
                format!("tangent {} does not match primal {}", v.shape(), p.shape()),
            ));
        }
    }
    Ok(())
}

/// Hessian-vector product of the scalar `f`: `H(primals)·tangents`, one
/// tensor per argument (forward over reverse).
pub fn hvp<M, F: TraceFn<M>>(f: F, primals: &[&Tensor], tangents: &[&Tensor]) -> Vec<Tensor> {
    match try_hvp(&f, primals, tangents) {
        Ok(r) => r,
        Err(e) => primals
            .iter()
            .map(|_| Tensor::sticky(Err(e.clone())))
            .collect(),
    }
}

/// [`hvp`], returning the error.
pub fn try_hvp<M, F: TraceFn<M> + ?Sized>(
    f: &F,
    primals: &[&Tensor],
    tangents: &[&Tensor],
) -> Result<Vec<Tensor>> {
    check_tangents("hvp", primals, tangents)?;
    let t = trace("hvp", f, &shapes_of(primals)?)?;
    let mut g = t.graph.clone();
    let loss = *g
        .outputs()
        .first()
        .ok_or_else(|| TensorError::invalid("hvp", "the function returned nothing"))?;
    g.set_outputs(vec![loss]);
    let h = rlx_autodiff::hvp(&g, &t.args).map_err(ad("hvp"))?;
    let mut b = bindings(&t, primals);
    for (i, v) in tangents.iter().enumerate() {
        b.insert(
            format!("{}{}", rlx_autodiff::TANGENT_PREFIX, arg_name(i)),
            (*v).clone(),
        );
    }
    inline("hvp", &h, &b)
}

/// `jax.vmap(f, in_axes, out_axes)`: `f` mapped over an axis of its
/// arguments. `in_axes[i]` is the batched axis of argument `i` (`None`: not
/// batched); every output gets the batch axis at `out_axis`.
///
/// ```
/// use rlx_tensor::{graph, shape, vmap, Tensor};
/// let g = graph("v", |s| {
///     let x = s.input("x", shape![5, 3]);
///     let w = s.input("w", shape![3]);
///     let f = vmap(|x: &Tensor, w: &Tensor| (x * w).sum(None, false), &[Some(0), None], 0);
///     f(&[&x, &w]).remove(0) // [5]
/// })
/// .unwrap();
/// assert_eq!(g.outputs().len(), 1);
/// ```
pub fn vmap<M, F: TraceFn<M>>(
    f: F,
    in_axes: &[Option<usize>],
    out_axis: usize,
) -> impl Fn(&[&Tensor]) -> Vec<Tensor> {
    let in_axes = in_axes.to_vec();
    move |args: &[&Tensor]| match try_vmap(&f, &in_axes, out_axis, args) {
        Ok(v) => v,
        Err(e) => vec![Tensor::sticky(Err(e))],
    }
}

/// The mapped call of [`vmap`], returning the error.
pub fn try_vmap<M, F: TraceFn<M> + ?Sized>(
    f: &F,
    in_axes: &[Option<usize>],
    out_axis: usize,
    args: &[&Tensor],
) -> Result<Vec<Tensor>> {
    if in_axes.len() != args.len() {
        return Err(TensorError::invalid(
            "vmap",
            format!("{} in_axes for {} arguments", in_axes.len(), args.len()),
        ));
    }
    let mut batch: Option<(usize, usize)> = None;
    let mut shapes = Vec::with_capacity(args.len());
    for (i, (a, ax)) in args.iter().zip(in_axes).enumerate() {
        a.check()?;
        let s = a.shape();
        match ax {
            None => shapes.push(s),
            Some(axis) => {
                let d = a
                    .dims()
                    .ok_or_else(|| TensorError::invalid("vmap", "needs static dims"))?;
                if *axis >= d.len() {
                    return Err(TensorError::invalid(
                        "vmap",
                        format!(
                            "in_axes[{i}] = {axis} is out of range for argument {i} of shape {s}"
                        ),
                    ));
                }
                match batch {
                    None => batch = Some((i, d[*axis])),
                    Some((j, b)) if b != d[*axis] => {
                        return Err(TensorError::invalid(
                            "vmap",
                            format!("argument {j} has batch size {b} but argument {i} has {} (shape {s}, axis {axis})", d[*axis]),
                        ))
                    }
                    _ => {}
                }
                let mut r = d.clone();
                r.remove(*axis);
                shapes.push(Shape::new(&r, s.dtype()));
            }
        }
    }
    let (_, b) = batch.ok_or_else(|| {
        TensorError::invalid("vmap", "no argument is batched (all in_axes are None)")
    })?;
    let t = trace("vmap", f, &shapes)?;
    let names: Vec<(String, usize)> = in_axes
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.map(|a| (arg_name(i), a)))
        .collect();
    let refs: Vec<(&str, usize)> = names.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let v = rlx_autodiff::vmap_axes(&t.graph, &refs, out_axis, b).map_err(ad("vmap"))?;
    inline("vmap", &v, &bindings(&t, args))
}

/// Where and how a [`jit`]ed function compiles.
#[derive(Clone, Debug)]
pub struct JitOptions {
    /// The device (default CPU).
    pub device: Device,
    /// Compile options.
    pub compile: CompileOptions,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            device: Device::Cpu,
            compile: CompileOptions::default(),
        }
    }
}

/// Compiles `g` on `opts.device` with `opts.compile`; `what` names the step in the error.
pub(crate) fn compile_on(opts: &JitOptions, g: Graph, what: &str) -> Result<CompiledGraph> {
    Session::new(opts.device)
        .try_compile_with(g, &opts.compile)
        .map_err(|source| TensorError::Runtime {
            what: what.into(),
            source: Box::new(source),
        })
}

/// A [`jit`]ed function: traced and compiled once per argument shapes and
/// dtypes, then run from the cache. A `Jit` is not `Sync`: its cache is the
/// calling thread's.
pub struct Jit<F, M> {
    f: F,
    opts: JitOptions,
    cache: RefCell<HashMap<Vec<Shape>, CompiledGraph>>,
    traces: Cell<usize>,
    _m: PhantomData<fn() -> M>,
}

/// `jax.jit(f)`: call with host tensors; each new combination of argument
/// shapes / dtypes traces and compiles `f` once.
///
/// ```
/// use rlx_ir::HostTensor;
/// use rlx_tensor::{jit, Tensor};
/// let f = jit(|x: &Tensor| (x * 2.0 + 1.0).relu());
/// let x = HostTensor::from_vec(vec![-1.0f32, 0.5, 2.0], &[3]).unwrap();
/// let y = f.call(&[&x]).unwrap();
/// assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![0.0, 2.0, 5.0]);
/// f.call(&[&x]).unwrap();
/// assert_eq!(f.traces(), 1);
/// ```
pub fn jit<M, F: TraceFn<M>>(f: F) -> Jit<F, M> {
    jit_with(f, JitOptions::default())
}

/// [`jit`] on a device with compile options.
pub fn jit_with<M, F: TraceFn<M>>(f: F, opts: JitOptions) -> Jit<F, M> {
    Jit {
        f,
        opts,
        cache: RefCell::new(HashMap::new()),
        traces: Cell::new(0),
        _m: PhantomData,
    }
}

impl<M, F: TraceFn<M>> Jit<F, M> {
    /// Runs `f` on host tensors (tracing and compiling on a new signature).
    pub fn call(&self, args: &[&HostTensor]) -> Result<Vec<HostTensor>> {
        let key: Vec<Shape> = args.iter().map(|a| a.shape()).collect();
        if !self.cache.borrow().contains_key(&key) {
            let c = compile_on(&self.opts, self.trace_graph(&key)?, "jit compile")?;
            self.traces.set(self.traces.get() + 1);
            self.cache.borrow_mut().insert(key.clone(), c);
        }
        let names: Vec<String> = (0..args.len()).map(arg_name).collect();
        let inputs: Vec<(&str, &HostTensor)> = names
            .iter()
            .map(|n| n.as_str())
            .zip(args.iter().copied())
            .collect();
        let mut cache = self.cache.borrow_mut();
        let c = cache.get_mut(&key).expect("compiled above");
        c.try_run_typed(&inputs)
            .map_err(|source| TensorError::Runtime {
                what: "jit run".into(),
                source: Box::new(source),
            })
    }

    /// The graph `f` traces to for these argument shapes (inputs `arg0`, ...).
    pub fn trace_graph(&self, shapes: &[Shape]) -> Result<Graph> {
        if let Some(n) = self.f.arity() {
            if n != shapes.len() {
                return Err(TensorError::invalid(
                    "jit",
                    format!("the function takes {n} arguments, given {}", shapes.len()),
                ));
            }
        }
        crate::scope::graph_with(ScopeOptions::named("jit"), |s| {
            let xs: Vec<Tensor> = shapes
                .iter()
                .enumerate()
                .map(|(i, sh)| s.input(&arg_name(i), sh.clone()))
                .collect();
            self.f.call_traced(&xs)
        })
    }

    /// How many times `f` was traced and compiled.
    pub fn traces(&self) -> usize {
        self.traces.get()
    }
}
