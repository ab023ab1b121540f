//! The op library: jax.numpy / jax.nn names (as `rlx_tensor` spells them),
//! each with a signature, its expansion-time type rule and the builder call.

use super::env::{Binding, Val};
use super::expr::elementwise_ty;
use super::Expander;
use crate::ast::{Arg, BinOp, Expr};
use crate::ty::{self, DType, Dim, Ty};
use proc_macro2::{Literal, Span};
use quote::quote;
use syn::{Error, Ident, Result};

/// Parameters of an op: name and default (`None` = required).
type Sig = &'static [(&'static str, Option<&'static str>)];

const X: Sig = &[("x", None)];
const GELU: Sig = &[("x", None), ("approximate", Some("false"))];
const AB: Sig = &[("a", None), ("b", None)];
const WHERE: Sig = &[("condition", None), ("x", None), ("y", None)];
const REDUCE: Sig = &[
    ("x", None),
    ("axis", Some("None")),
    ("keepdims", Some("false")),
];
const ARG_REDUCE: Sig = &[("x", None), ("axis", None), ("keepdims", Some("false"))];
const SOFTMAX: Sig = &[("x", None), ("axis", Some("-1"))];
const LAYER_NORM: Sig = &[
    ("x", None),
    ("gamma", Some("None")),
    ("beta", Some("None")),
    ("eps", Some("1e-5")),
    ("axis", Some("-1")),
];
const RMS_NORM: Sig = &[("x", None), ("gamma", Some("None")), ("eps", Some("1e-6"))];
const CUMSUM: Sig = &[
    ("x", None),
    ("axis", None),
    ("exclusive", Some("false")),
    ("reverse", Some("false")),
];
const RESHAPE: Sig = &[("x", None), ("shape", None)];
const TRANSPOSE: Sig = &[("x", None), ("axes", Some("None"))];
const SWAPAXES: Sig = &[("x", None), ("axis1", None), ("axis2", None)];
const AXIS: Sig = &[("x", None), ("axis", None)];
const CONCAT: Sig = &[("arrays", None), ("axis", Some("0"))];
const ASTYPE: Sig = &[("x", None), ("dtype", None)];

/// Elementwise unary ops: name, `GraphExt` method, float-only.
const UNARY: &[(&str, &str, bool)] = &[
    ("relu", "relu", true),
    ("tanh", "tanh", true),
    ("exp", "exp", true),
    ("log", "log", true),
    ("sqrt", "sqrt", true),
    ("rsqrt", "rsqrt", true),
    ("sigmoid", "sigmoid", true),
    ("silu", "silu", true),
    ("erf", "erf", true),
    ("sin", "sin", true),
    ("cos", "cos", true),
    ("softplus", "softplus", true),
    ("reciprocal", "reciprocal", true),
    ("floor", "floor", true),
    ("ceil", "ceil", true),
    ("round", "round", true),
    ("abs", "abs", false),
    ("negative", "neg", false),
    ("sign", "sign", false),
];

/// Binary ops as functions.
const BINARY: &[(&str, BinOp)] = &[
    ("add", BinOp::Add),
    ("subtract", BinOp::Sub),
    ("multiply", BinOp::Mul),
    ("divide", BinOp::Div),
    ("power", BinOp::Pow),
    ("remainder", BinOp::Rem),
    ("matmul", BinOp::MatMul),
];

/// The names `call` knows, for the "unknown function" message.
pub(super) fn op_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = UNARY.iter().map(|u| u.0).collect();
    v.extend(BINARY.iter().map(|b| b.0));
    v.extend([
        "gelu",
        "square",
        "maximum",
        "minimum",
        "where",
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "argmax",
        "argmin",
        "softmax",
        "log_softmax",
        "logsumexp",
        "layer_norm",
        "rms_norm",
        "cumsum",
        "reshape",
        "transpose",
        "swapaxes",
        "expand_dims",
        "squeeze",
        "concatenate",
        "concat",
        "astype",
    ]);
    v
}

/// Binds call arguments to a signature: positional first, then keywords.
fn bind<'a>(op: &str, sig: Sig, args: &'a [Arg], span: Span) -> Result<Vec<Option<&'a Expr>>> {
    let shown = || {
        let ps: Vec<String> = sig
            .iter()
            .map(|(n, d)| match d {
                Some(d) => format!("{n}={d}"),
                None => n.to_string(),
            })
            .collect();
        format!("{op}({})", ps.join(", "))
    };
    let mut out: Vec<Option<&Expr>> = vec![None; sig.len()];
    let mut pos = 0;
    for a in args {
        let i = match &a.name {
            None => {
                if pos >= sig.len() {
                    return Err(Error::new(
                        span,
                        format!(
                            "wrong number of arguments: `{op}` takes at most {}, given {} (signature: {})",
                            sig.len(),
                            args.len(),
                            shown()
                        ),
                    ));
                }
                pos += 1;
                pos - 1
            }
            Some(k) => sig.iter().position(|(n, _)| k == n).ok_or_else(|| {
                Error::new(
                    k.span(),
                    format!("`{op}` has no argument `{k}` (signature: {})", shown()),
                )
            })?,
        };
        if out[i].is_some() {
            return Err(Error::new(
                a.value.span(),
                format!("argument `{}` of `{op}` given twice", sig[i].0),
            ));
        }
        out[i] = Some(&a.value);
    }
    if let Some(i) = (0..sig.len()).find(|&i| out[i].is_none() && sig[i].1.is_none()) {
        return Err(Error::new(
            span,
            format!(
                "wrong number of arguments: `{op}` needs `{}` (signature: {})",
                sig[i].0,
                shown()
            ),
        ));
    }
    Ok(out)
}

impl Expander {
    /// `func(args)`: a user `fn`, else an op of the library.
    pub(super) fn call(&mut self, func: &Ident, args: &[Arg], span: Span) -> Result<Val> {
        let name = func.to_string();
        match self.env().get(&name).cloned() {
            Some(Binding::Fn(f, defs)) => return self.call_fn(&f, defs, args, span),
            Some(Binding::Val(_)) => {
                return Err(Error::new(
                    span,
                    format!("`{name}` is a value, not a function"),
                ))
            }
            None => {}
        }
        if let Some(&(_, method, float)) = UNARY.iter().find(|u| u.0 == name) {
            let a = bind(&name, X, args, span)?;
            return self.unary(&name, method, float, arg(&a, 0), span);
        }
        if let Some(&(_, op)) = BINARY.iter().find(|b| b.0 == name) {
            let a = bind(&name, AB, args, span)?;
            let (x, y) = (self.expr(arg(&a, 0))?, self.expr(arg(&a, 1))?);
            return self.binary(op, x, y, span);
        }
        match name.as_str() {
            "gelu" => {
                let a = bind(&name, GELU, args, span)?;
                let approx = opt(&a, 1)
                    .map(|e| self.boolean(e))
                    .transpose()?
                    .unwrap_or(false);
                let m = if approx { "gelu_approx" } else { "gelu" };
                self.unary(&name, m, true, arg(&a, 0), span)
            }
            "square" => {
                let a = bind(&name, X, args, span)?;
                let x = self.expr(arg(&a, 0))?;
                self.binary(BinOp::Mul, x.clone(), x, span)
            }
            "maximum" | "minimum" => {
                let a = bind(&name, AB, args, span)?;
                self.min_max(&name, arg(&a, 0), arg(&a, 1), span)
            }
            "where" => {
                let a = bind(&name, WHERE, args, span)?;
                self.where_(arg(&a, 0), arg(&a, 1), arg(&a, 2), span)
            }
            "sum" | "mean" | "max" | "min" | "prod" => {
                let a = bind(&name, REDUCE, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let axes = opt(&a, 1).map(|e| self.axes(e)).transpose()?.flatten();
                let keep = opt(&a, 2)
                    .map(|e| self.boolean(e))
                    .transpose()?
                    .unwrap_or(false);
                self.reduce(&name, x, &t, axes, keep, span)
            }
            "argmax" | "argmin" => {
                let a = bind(&name, ARG_REDUCE, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let axis = self.int(arg(&a, 1))?;
                let keep = opt(&a, 2)
                    .map(|e| self.boolean(e))
                    .transpose()?
                    .unwrap_or(false);
                let ax = t
                    .axis(axis, &name)
                    .map_err(|m| Error::new(arg(&a, 1).span(), m))?;
                let mut dims = t.dims.clone();
                if keep {
                    dims[ax] = Dim::Static(1);
                } else {
                    dims.remove(ax);
                }
                let m = Ident::new(&name, Span::call_site());
                Ok(self.push(
                    Ty::new(DType::I64, dims),
                    |g| quote!(#g.#m(#x, #axis, #keep)),
                ))
            }
            "softmax" | "log_softmax" => {
                let a = bind(&name, SOFTMAX, args, span)?;
                let (x, t) = self.float_tensor(&name, arg(&a, 0))?;
                let axis = opt(&a, 1).map(|e| self.int(e)).transpose()?.unwrap_or(-1);
                t.axis(axis, &name)
                    .map_err(|m| Error::new(opt(&a, 1).map_or(span, |e| e.span()), m))?;
                let m = Ident::new(
                    if name == "softmax" {
                        "sm"
                    } else {
                        "log_softmax"
                    },
                    Span::call_site(),
                );
                Ok(self.push(t, |g| quote!(#g.#m(#x, #axis))))
            }
            "logsumexp" => {
                let a = bind(&name, REDUCE, args, span)?;
                self.logsumexp(&a, span)
            }
            "layer_norm" => {
                let a = bind(&name, LAYER_NORM, args, span)?;
                self.layer_norm(&a, span)
            }
            "rms_norm" => {
                let a = bind(&name, RMS_NORM, args, span)?;
                self.rms_norm(&a)
            }
            "cumsum" => {
                let a = bind(&name, CUMSUM, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let axis = self.int(arg(&a, 1))?;
                t.axis(axis, &name)
                    .map_err(|m| Error::new(arg(&a, 1).span(), m))?;
                let ex = opt(&a, 2)
                    .map(|e| self.boolean(e))
                    .transpose()?
                    .unwrap_or(false);
                let rev = opt(&a, 3)
                    .map(|e| self.boolean(e))
                    .transpose()?
                    .unwrap_or(false);
                Ok(self.push(t, |g| quote!(#g.cumsum(#x, #axis, #ex, #rev))))
            }
            "reshape" => {
                let a = bind(&name, RESHAPE, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let target = self.dims(arg(&a, 1))?;
                let out = ty::reshape(&t, &target).map_err(|m| Error::new(arg(&a, 1).span(), m))?;
                Ok(self.reshape_to(x, out))
            }
            "transpose" => {
                let a = bind(&name, TRANSPOSE, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let perm = match opt(&a, 1).map(|e| self.axes(e)).transpose()?.flatten() {
                    None => (0..t.rank()).rev().collect(),
                    Some(p) => {
                        let e = opt(&a, 1).expect("given");
                        let p: Vec<usize> = p
                            .iter()
                            .map(|&d| t.axis(d, "transpose"))
                            .collect::<std::result::Result<_, _>>()
                            .map_err(|m| Error::new(e.span(), m))?;
                        let mut sorted = p.clone();
                        sorted.sort_unstable();
                        if sorted != (0..t.rank()).collect::<Vec<_>>() {
                            return Err(Error::new(
                                e.span(),
                                format!("transpose: {p:?} is not a permutation of the axes of {t}"),
                            ));
                        }
                        p
                    }
                };
                Ok(self.transpose(x, &t, perm))
            }
            "swapaxes" => {
                let a = bind(&name, SWAPAXES, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let i = self.int(arg(&a, 1))?;
                let j = self.int(arg(&a, 2))?;
                let i = t
                    .axis(i, &name)
                    .map_err(|m| Error::new(arg(&a, 1).span(), m))?;
                let j = t
                    .axis(j, &name)
                    .map_err(|m| Error::new(arg(&a, 2).span(), m))?;
                let mut perm: Vec<usize> = (0..t.rank()).collect();
                perm.swap(i, j);
                Ok(self.transpose(x, &t, perm))
            }
            "expand_dims" | "squeeze" => {
                let a = bind(&name, AXIS, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let axis = self.int(arg(&a, 1))?;
                let mut dims = t.dims.clone();
                if name == "expand_dims" {
                    let r = t.rank() as i64 + 1;
                    let ax = if axis < 0 { axis + r } else { axis };
                    if !(0..r).contains(&ax) {
                        return Err(Error::new(
                            arg(&a, 1).span(),
                            format!("expand_dims: axis {axis} is out of range for {t}"),
                        ));
                    }
                    dims.insert(ax as usize, Dim::Static(1));
                } else {
                    let ax = t
                        .axis(axis, &name)
                        .map_err(|m| Error::new(arg(&a, 1).span(), m))?;
                    if dims[ax] != Dim::Static(1) {
                        return Err(Error::new(
                            arg(&a, 1).span(),
                            format!("squeeze: axis {axis} of {t} is not 1"),
                        ));
                    }
                    dims.remove(ax);
                }
                Ok(self.reshape_to(x, Ty::new(t.dtype, dims)))
            }
            "concatenate" | "concat" => {
                let a = bind(&name, CONCAT, args, span)?;
                let axis = opt(&a, 1).map(|e| self.int(e)).transpose()?.unwrap_or(0);
                self.concat(arg(&a, 0), axis, opt(&a, 1).map_or(span, |e| e.span()))
            }
            "astype" => {
                let a = bind(&name, ASTYPE, args, span)?;
                let (x, t) = self.tensor(arg(&a, 0))?;
                let dt = self.dtype(arg(&a, 1))?;
                let d = dt.tokens(&self.krate);
                Ok(self.push(Ty::new(dt, t.dims), |g| quote!(#g.cast(#x, #d))))
            }
            _ => {
                if self.declared.contains(&name) {
                    return Err(self.missing(func));
                }
                Err(Error::new(
                    span,
                    format!(
                        "unknown name `{name}`: not a fn declared before this point nor an op ({})",
                        op_names().join(", ")
                    ),
                ))
            }
        }
    }

    /// A tensor argument as a node (a literal becomes a scalar constant).
    fn tensor(&mut self, e: &Expr) -> Result<(Ident, Ty)> {
        let v = self.expr(e)?;
        self.node(&v, e.span())
    }

    /// A floating-point tensor argument.
    fn float_tensor(&mut self, op: &str, e: &Expr) -> Result<(Ident, Ty)> {
        let (x, t) = self.tensor(e)?;
        if !t.dtype.is_float() {
            return Err(Error::new(
                e.span(),
                format!("`{op}` needs a floating-point tensor, given {t} (cast with astype)"),
            ));
        }
        Ok((x, t))
    }

    fn unary(&mut self, op: &str, method: &str, float: bool, e: &Expr, _span: Span) -> Result<Val> {
        let (x, t) = if float {
            self.float_tensor(op, e)?
        } else {
            self.tensor(e)?
        };
        if t.dtype == DType::Bool {
            return Err(Error::new(e.span(), format!("`{op}` of {t}")));
        }
        let m = Ident::new(method, Span::call_site());
        Ok(self.push(t, |g| quote!(#g.#m(#x))))
    }

    fn min_max(&mut self, op: &str, a: &Expr, b: &Expr, span: Span) -> Result<Val> {
        // Same checks as an operator, then the maximum / minimum builder.
        let (va, vb) = (self.expr(a)?, self.expr(b)?);
        let ty = elementwise_ty(op, &va, &vb, span)?;
        let (x, y) = (self.node(&va, a.span())?.0, self.node(&vb, b.span())?.0);
        let m = Ident::new(op, Span::call_site());
        Ok(self.push(ty, |g| quote!(#g.#m(#x, #y))))
    }

    fn where_(&mut self, c: &Expr, a: &Expr, b: &Expr, span: Span) -> Result<Val> {
        let (cv, ct) = self.tensor(c)?;
        if ct.dtype != DType::Bool {
            return Err(Error::new(
                c.span(),
                format!("where: the condition is {ct}, not bool"),
            ));
        }
        let (va, vb) = (self.expr(a)?, self.expr(b)?);
        let t = elementwise_ty("where", &va, &vb, span)?;
        let dims = ty::broadcast(&ct.dims, &t.dims)
            .map_err(|m| Error::new(span, format!("where: {m}")))?;
        let (x, y) = (self.node(&va, a.span())?.0, self.node(&vb, b.span())?.0);
        Ok(self.push(Ty::new(t.dtype, dims), |g| quote!(#g.where_(#cv, #x, #y))))
    }

    fn reduce(
        &mut self,
        op: &str,
        x: Ident,
        t: &Ty,
        axes: Option<Vec<i64>>,
        keep: bool,
        span: Span,
    ) -> Result<Val> {
        let axes: Vec<usize> = match axes {
            None => (0..t.rank()).collect(),
            Some(a) => a
                .iter()
                .map(|&d| t.axis(d, op))
                .collect::<std::result::Result<_, _>>()
                .map_err(|m| Error::new(span, m))?,
        };
        if (1..axes.len()).any(|i| axes[..i].contains(&axes[i])) {
            return Err(Error::new(
                span,
                format!("{op}: an axis is repeated in {axes:?}"),
            ));
        }
        let mut dims = Vec::new();
        for (i, d) in t.dims.iter().enumerate() {
            if !axes.contains(&i) {
                dims.push(d.clone());
            } else if keep {
                dims.push(Dim::Static(1));
            }
        }
        let m = Ident::new(
            match op {
                "max" => "reduce_max",
                "min" => "reduce_min",
                o => o,
            },
            Span::call_site(),
        );
        let ax = axes.iter().map(|&a| a as i64);
        Ok(self.push(
            Ty::new(t.dtype, dims),
            |g| quote!(#g.#m(#x, &[#(#ax),*], #keep)),
        ))
    }

    /// `log(sum(exp(x - max))) + max`, stable at large magnitudes.
    fn logsumexp(&mut self, a: &[Option<&Expr>], span: Span) -> Result<Val> {
        let (x, t) = self.float_tensor("logsumexp", arg(a, 0))?;
        let axes: Vec<usize> = match opt(a, 1).map(|e| self.axes(e)).transpose()?.flatten() {
            None => (0..t.rank()).collect(),
            Some(ax) => ax
                .iter()
                .map(|&d| t.axis(d, "logsumexp"))
                .collect::<std::result::Result<_, _>>()
                .map_err(|m| Error::new(span, m))?,
        };
        let keep = opt(a, 2)
            .map(|e| self.boolean(e))
            .transpose()?
            .unwrap_or(false);
        let ax: Vec<i64> = axes.iter().map(|&d| d as i64).collect();
        let m = self.reduce("max", x.clone(), &t, Some(ax.clone()), true, span)?;
        let d = self.binary(BinOp::Sub, self.node_of(x, t.clone()), m.clone(), span)?;
        let (dv, dt) = self.node(&d, span)?;
        let e = self.push(dt.clone(), |g| quote!(#g.exp(#dv)));
        let ev = self.node(&e, span)?.0;
        let s = self.reduce("sum", ev, &dt, Some(ax), true, span)?;
        let (sv, st) = self.node(&s, span)?;
        let l = self.push(st, |g| quote!(#g.log(#sv)));
        let r = self.binary(BinOp::Add, l, m, span)?;
        if keep {
            return Ok(r);
        }
        let dims = (0..t.rank())
            .filter(|i| !axes.contains(i))
            .map(|i| t.dims[i].clone())
            .collect();
        let rv = self.node(&r, span)?.0;
        Ok(self.reshape_to(rv, Ty::new(t.dtype, dims)))
    }

    fn node_of(&self, var: Ident, ty: Ty) -> Val {
        Val::Node {
            var,
            ty,
            depth: self.depth(),
        }
    }

    fn layer_norm(&mut self, a: &[Option<&Expr>], span: Span) -> Result<Val> {
        let (x, t) = self.float_tensor("layer_norm", arg(a, 0))?;
        let axis = opt(a, 4).map(|e| self.int(e)).transpose()?.unwrap_or(-1);
        let ax = t
            .axis(axis, "layer_norm")
            .map_err(|m| Error::new(opt(a, 4).map_or(span, |e| e.span()), m))?;
        let tail = Ty::new(t.dtype, t.dims[ax..].to_vec());
        let gamma = self.affine(opt(a, 1), &tail, "gamma")?;
        let beta = self.affine(opt(a, 2), &tail, "beta")?;
        if beta.is_some() && gamma.is_none() {
            return Err(Error::new(span, "layer_norm: beta without gamma"));
        }
        let eps = opt(a, 3)
            .map(|e| self.number(e))
            .transpose()?
            .map_or(1e-5, |v| v.0);
        let eps = Literal::f64_suffixed(eps);
        let (gm, bt) = (opt_tokens(gamma), opt_tokens(beta));
        let axis = ax as i64;
        Ok(self.push(t, |g| quote!(#g.layer_norm_axis(#x, #axis, #gm, #bt, #eps))))
    }

    fn rms_norm(&mut self, a: &[Option<&Expr>]) -> Result<Val> {
        let (x, t) = self.float_tensor("rms_norm", arg(a, 0))?;
        if t.rank() == 0 {
            return Err(Error::new(arg(a, 0).span(), "rms_norm of a scalar"));
        }
        let tail = Ty::new(t.dtype, t.dims[t.rank() - 1..].to_vec());
        let gamma = self.affine(opt(a, 1), &tail, "gamma")?;
        let eps = opt(a, 2)
            .map(|e| self.number(e))
            .transpose()?
            .map_or(1e-6, |v| v.0);
        let eps = Literal::f64_suffixed(eps);
        let gm = opt_tokens(gamma);
        Ok(self.push(t, |g| quote!(#g.rms_norm(#x, #gm, #eps))))
    }

    /// A norm's gamma / beta: `None`, or a tensor of exactly the normalised dims.
    fn affine(&mut self, e: Option<&Expr>, want: &Ty, what: &str) -> Result<Option<Ident>> {
        match e {
            None => Ok(None),
            Some(Expr::Name(n)) if n == "None" => Ok(None),
            Some(e) => {
                let (v, t) = self.tensor(e)?;
                if t != *want {
                    return Err(Error::new(
                        e.span(),
                        format!("shape mismatch: {what} is {t}, the normalised dims are {want}"),
                    ));
                }
                Ok(Some(v))
            }
        }
    }

    fn reshape_to(&mut self, x: Ident, out: Ty) -> Val {
        let s = out.tokens(&self.krate);
        self.push(out, |g| quote!(#g.reshape(#x, #s)))
    }

    fn transpose(&mut self, x: Ident, t: &Ty, perm: Vec<usize>) -> Val {
        let dims = perm.iter().map(|&p| t.dims[p].clone()).collect();
        self.push(
            Ty::new(t.dtype, dims),
            |g| quote!(#g.transpose_(#x, &[#(#perm),*])),
        )
    }

    fn concat(&mut self, list: &Expr, axis: i64, axis_span: Span) -> Result<Val> {
        let (Expr::List(items, _) | Expr::Tuple(items, _)) = list else {
            return Err(Error::new(
                list.span(),
                "concatenate takes a list `[a, b, ..]`",
            ));
        };
        let mut vars = Vec::new();
        let mut first: Option<Ty> = None;
        let mut total = 0usize;
        let mut ax = 0;
        for it in items {
            let (v, t) = self.tensor(it)?;
            let f = first.get_or_insert_with(|| t.clone()).clone();
            ax = f
                .axis(axis, "concatenate")
                .map_err(|m| Error::new(axis_span, m))?;
            let same_rest = t.rank() == f.rank()
                && t.dtype == f.dtype
                && (0..t.rank()).all(|i| i == ax || t.dims[i] == f.dims[i]);
            if !same_rest {
                return Err(Error::new(
                    it.span(),
                    format!("shape mismatch: concatenate along axis {axis}: {t} vs {f}"),
                ));
            }
            match &t.dims[ax] {
                Dim::Static(n) => total += n,
                Dim::Sym(s) => {
                    return Err(Error::new(
                        it.span(),
                        format!("concatenate along the symbolic dim {s}"),
                    ))
                }
            }
            vars.push(v);
        }
        let Some(mut t) = first else {
            return Err(Error::new(list.span(), "concatenate of no arrays"));
        };
        t.dims[ax] = Dim::Static(total);
        let axis = ax as i64;
        Ok(self.push(t, |g| quote!(#g.concat_(&[#(#vars),*], #axis))))
    }
}

fn arg<'a>(a: &[Option<&'a Expr>], i: usize) -> &'a Expr {
    a[i].expect("bind checked required arguments")
}

fn opt<'a>(a: &[Option<&'a Expr>], i: usize) -> Option<&'a Expr> {
    a[i]
}

fn opt_tokens(v: Option<Ident>) -> proc_macro2::TokenStream {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}
