//! Expressions: names, literals, operators, `fn` calls, and the
//! constant arguments of op calls (axes, dims, dtypes).

use super::env::{Binding, Env, Val};
use super::Expander;
use crate::ast::{BinOp, Expr, TypeAst};
use crate::ty::{self, DType, Dim, Ty};
use proc_macro2::{Literal, Span};
use quote::quote;
use syn::{Error, Ident, Result};

impl Expander {
    /// Evaluates an expression in the current frame.
    pub(super) fn expr(&mut self, e: &Expr) -> Result<Val> {
        match e {
            Expr::Num { value, is_int, .. } => Ok(Val::Lit {
                value: *value,
                is_int: *is_int,
            }),
            Expr::Bool(_, span) => Err(Error::new(
                *span,
                "`true` / `false` are only op arguments (`keepdims=true`)",
            )),
            Expr::Name(n) => self.lookup(n),
            Expr::Neg(inner, span) => match self.expr(inner)? {
                Val::Lit { value, is_int } => Ok(Val::Lit {
                    value: -value,
                    is_int,
                }),
                v => {
                    let (x, ty) = self.node(&v, *span)?;
                    if ty.dtype == DType::Bool {
                        return Err(Error::new(*span, format!("unary `-` of {ty}")));
                    }
                    Ok(self.push(ty, |g| quote!(#g.neg(#x))))
                }
            },
            Expr::Binary { op, lhs, rhs, span } => {
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                self.binary(*op, a, b, *span)
            }
            Expr::Call { func, args, span } => self.call(func, args, *span),
            Expr::List(_, span) | Expr::Tuple(_, span) => Err(Error::new(
                *span,
                "a list / tuple is only an op argument (dims, axes, concatenate's operands)",
            )),
            Expr::Scan(s) => Err(Error::new(
                s.span,
                "bind a scan with `let (carry.., ys..) = scan(..) |..| { .. };`",
            )),
        }
    }

    /// The value a name stands for; the error tells "unknown" from "used too early".
    pub(super) fn lookup(&mut self, n: &Ident) -> Result<Val> {
        match self.env().get(&n.to_string()) {
            Some(Binding::Val(v)) => Ok(v.clone()),
            Some(Binding::Fn(..)) => Err(Error::new(
                n.span(),
                format!("`{n}` is a fn: call it as `{n}(..)`"),
            )),
            None => Err(self.missing(n)),
        }
    }

    /// "unknown name" or "used before its declaration".
    pub(super) fn missing(&self, n: &Ident) -> Error {
        if self.declared.contains(&n.to_string()) {
            Error::new(n.span(), format!("`{n}` is used before its declaration"))
        } else {
            Error::new(n.span(), format!("unknown name `{n}`"))
        }
    }

    /// The node variable of `v` in the current frame: a literal becomes a
    /// scalar constant, a node of an enclosing graph is captured.
    pub(super) fn var(&mut self, v: &Val, _span: Span) -> Result<Ident> {
        match v {
            Val::Lit { value, is_int } => {
                let dt = if *is_int { DType::I32 } else { DType::F32 };
                let n = self.scalar(*value, dt);
                Ok(n.0)
            }
            Val::Node { var, ty, depth } => Ok(self.capture(var, ty, *depth)),
        }
    }

    /// `v` as a node: its variable and type.
    pub(super) fn node(&mut self, v: &Val, span: Span) -> Result<(Ident, Ty)> {
        let var = self.var(v, span)?;
        let ty = match v {
            Val::Node { ty, .. } => ty.clone(),
            Val::Lit { is_int, .. } => {
                Ty::new(if *is_int { DType::I32 } else { DType::F32 }, vec![])
            }
        };
        Ok((var, ty))
    }

    /// A rank-0 constant node.
    pub(super) fn scalar(&mut self, value: f64, dt: DType) -> (Ident, Ty) {
        let lit = Literal::f64_suffixed(value);
        let d = dt.tokens(&self.krate);
        let ty = Ty::new(dt, vec![]);
        match self.push(ty.clone(), |g| quote!(#g.scalar(#lit, #d))) {
            Val::Node { var, .. } => (var, ty),
            Val::Lit { .. } => unreachable!("push makes a node"),
        }
    }

    /// Threads a node of frame `depth` into the current frame as scan-body inputs.
    fn capture(&mut self, var: &Ident, ty: &Ty, depth: usize) -> Ident {
        let mut cur = var.clone();
        for k in depth + 1..self.frames.len() {
            let known = self.frames[k]
                .captures
                .iter()
                .find(|(outer, _, _)| *outer == cur)
                .map(|c| c.1.clone());
            cur = match known {
                Some(inner) => inner,
                None => {
                    let inner = self.fresh("cap");
                    self.frames[k]
                        .captures
                        .push((cur, inner.clone(), ty.clone()));
                    inner
                }
            };
        }
        cur
    }

    /// `a OP b` with numpy broadcasting; literals are weakly typed.
    pub(super) fn binary(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> Result<Val> {
        let cmp = matches!(
            op,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        );
        if let (
            Val::Lit {
                value: x,
                is_int: ix,
            },
            Val::Lit {
                value: y,
                is_int: iy,
            },
        ) = (&a, &b)
        {
            if let Some(v) = fold(op, *x, *y) {
                let is_int = *ix && *iy && !matches!(op, BinOp::Div) && v.fract() == 0.0;
                return Ok(Val::Lit { value: v, is_int });
            }
        }
        if op == BinOp::MatMul {
            let (x, xt) = self.node(&a, span)?;
            let (y, yt) = self.node(&b, span)?;
            let ty = ty::matmul(&xt, &yt).map_err(|m| Error::new(span, m))?;
            return Ok(self.push(ty, |g| quote!(#g.mm(#x, #y))));
        }
        let Ty { dtype, dims } = elementwise_ty(op.symbol(), &a, &b, span)?;
        let (a, b) = (self.operand(&a, span)?, self.operand(&b, span)?);
        let int = !dtype.is_float() && dtype != DType::Bool;
        if op == BinOp::Div && int {
            // JAX's true division: integers divide as f32.
            let f = DType::F32.tokens(&self.krate);
            let ty = Ty::new(DType::F32, dims);
            return Ok(self.push(ty, |g| {
                quote!({
                    let a = #g.operand_node(#a, ::core::option::Option::Some(#f));
                    let b = #g.operand_node(#b, ::core::option::Option::Some(#f));
                    let (a, b) = (#g.cast(a, #f), #g.cast(b, #f));
                    #g.div(a, b)
                })
            }));
        }
        let method = Ident::new(method_of(op), Span::call_site());
        let out_dt = if cmp { DType::Bool } else { dtype };
        Ok(self.push(Ty::new(out_dt, dims), |g| quote!(#g.#method(#a, #b))))
    }

    /// A builder operand: the node variable, or an `f64` literal.
    fn operand(&mut self, v: &Val, span: Span) -> Result<proc_macro2::TokenStream> {
        match v {
            Val::Lit { value, .. } => {
                let lit = Literal::f64_suffixed(*value);
                Ok(quote!(#lit))
            }
            node => {
                let var = self.var(node, span)?;
                Ok(quote!(#var))
            }
        }
    }

    /// Inlines a `fn` call: arguments bound to its parameters in the
    /// environment where the fn was defined.
    pub(super) fn call_fn(
        &mut self,
        f: &crate::ast::FnDef,
        defs: std::rc::Rc<super::env::Scope>,
        args: &[crate::ast::Arg],
        span: Span,
    ) -> Result<Val> {
        if args.len() != f.params.len() || args.iter().any(|a| a.name.is_some()) {
            return Err(Error::new(
                span,
                format!(
                    "wrong number of arguments: fn `{}` takes {} positional argument(s) ({}), given {}",
                    f.name,
                    f.params.len(),
                    names(&f.params),
                    args.len()
                ),
            ));
        }
        let vals = args
            .iter()
            .map(|a| self.expr(&a.value))
            .collect::<Result<Vec<_>>>()?;
        let mut env = Env::new((*defs).clone());
        env.scopes.push(Default::default());
        for (p, v) in f.params.iter().zip(vals) {
            env.scopes[1].insert(p.to_string(), Binding::Val(v));
        }
        let saved = std::mem::replace(self.env(), env);
        let r = self.stmts(&f.body).and_then(|_| self.expr(&f.result));
        *self.env() = saved;
        r
    }

    /// `const NAME = 0.5;` (a weak literal), `const NAME: f32 = 0.5;`
    /// (a scalar node) or `const NAME: f32[2] = [1, 2];` (a tensor constant).
    pub(super) fn constant(&mut self, ty: Option<&TypeAst>, value: &Expr) -> Result<Val> {
        let Some(t) = ty else {
            return self
                .number(value)
                .map(|(value, is_int)| Val::Lit { value, is_int });
        };
        let ty = self.ty(t)?;
        let mut flat = Vec::new();
        let dims = self.nested(value, &mut flat)?;
        let want: Vec<Dim> = dims.iter().map(|&d| Dim::Static(d)).collect();
        if want != ty.dims {
            return Err(Error::new(
                value.span(),
                format!(
                    "shape mismatch: the value is {}, the declared type {ty}",
                    ty::fmt_dims(&want)
                ),
            ));
        }
        if ty.dims.is_empty() {
            let n = self.scalar(flat[0], ty.dtype);
            return Ok(self.node_val(n));
        }
        let k = &self.krate;
        let (elem, vals) = match ty.dtype {
            DType::F32 => (
                quote!(f32),
                flat.iter()
                    .map(|v| Literal::f32_suffixed(*v as f32))
                    .collect::<Vec<_>>(),
            ),
            DType::F64 => (
                quote!(f64),
                flat.iter().map(|v| Literal::f64_suffixed(*v)).collect(),
            ),
            DType::I32 => (
                quote!(i32),
                flat.iter()
                    .map(|v| Literal::i32_suffixed(*v as i32))
                    .collect(),
            ),
            DType::I64 => (
                quote!(i64),
                flat.iter()
                    .map(|v| Literal::i64_suffixed(*v as i64))
                    .collect(),
            ),
            d => {
                return Err(Error::new(
                    t.dtype.span(),
                    format!("tensor constants are f32, f64, i32 or i64, not {d}"),
                ))
            }
        };
        let k = k.clone();
        Ok(self.push(ty, |g| {
            quote!(#g.constant_tensor(
                &#k::HostTensor::from_vec::<#elem>(::std::vec![#(#vals),*], &[#(#dims),*])
                    .expect("rlx!: dims checked at expansion")
            ))
        }))
    }

    fn node_val(&self, (var, ty): (Ident, Ty)) -> Val {
        Val::Node {
            var,
            ty,
            depth: self.depth(),
        }
    }

    /// The dims of a nested list literal, its numbers flattened row-major.
    fn nested(&mut self, e: &Expr, flat: &mut Vec<f64>) -> Result<Vec<usize>> {
        match e {
            Expr::List(items, span) => {
                let mut inner: Option<Vec<usize>> = None;
                for it in items {
                    let d = self.nested(it, flat)?;
                    if inner.as_ref().is_some_and(|i| *i != d) {
                        return Err(Error::new(it.span(), "ragged list: rows differ in shape"));
                    }
                    inner = Some(d);
                }
                let mut dims = vec![items.len()];
                dims.extend(inner.unwrap_or_default());
                if items.is_empty() {
                    return Err(Error::new(*span, "empty constant"));
                }
                Ok(dims)
            }
            e => {
                flat.push(self.number(e)?.0);
                Ok(vec![])
            }
        }
    }

    /// A number known at expansion time (a literal, `-` literal or a const name).
    pub(super) fn number(&mut self, e: &Expr) -> Result<(f64, bool)> {
        match e {
            Expr::Num { value, is_int, .. } => Ok((*value, *is_int)),
            Expr::Neg(inner, _) => self.number(inner).map(|(v, i)| (-v, i)),
            Expr::Name(n) => match self.lookup(n)? {
                Val::Lit { value, is_int } => Ok((value, is_int)),
                Val::Node { .. } => Err(Error::new(
                    n.span(),
                    format!("expected a number known at expansion time, `{n}` is a tensor"),
                )),
            },
            e => Err(Error::new(
                e.span(),
                "expected a number known at expansion time",
            )),
        }
    }

    /// An integer known at expansion time.
    pub(super) fn int(&mut self, e: &Expr) -> Result<i64> {
        match self.number(e)? {
            (v, true) => Ok(v as i64),
            _ => Err(Error::new(e.span(), "expected an integer")),
        }
    }

    /// `true` / `false`.
    pub(super) fn boolean(&mut self, e: &Expr) -> Result<bool> {
        match e {
            Expr::Bool(b, _) => Ok(*b),
            e => Err(Error::new(e.span(), "expected `true` or `false`")),
        }
    }

    /// `None`, an axis, or a tuple / list of axes.
    pub(super) fn axes(&mut self, e: &Expr) -> Result<Option<Vec<i64>>> {
        match e {
            Expr::Name(n) if n == "None" => Ok(None),
            Expr::Tuple(items, _) | Expr::List(items, _) => items
                .iter()
                .map(|i| self.int(i))
                .collect::<Result<_>>()
                .map(Some),
            e => Ok(Some(vec![self.int(e)?])),
        }
    }

    /// A dtype name (`f32`, ...).
    pub(super) fn dtype(&mut self, e: &Expr) -> Result<DType> {
        match e {
            Expr::Name(n) => DType::parse(&n.to_string()).ok_or_else(|| {
                Error::new(
                    n.span(),
                    format!("unknown dtype `{n}` (one of {})", DType::spellings()),
                )
            }),
            e => Err(Error::new(e.span(), "expected a dtype (`f32`, `i64`, ...)")),
        }
    }

    /// A reshape target `[B, 4, -1]`: integers, symbols, at most one `-1` (None).
    pub(super) fn dims(&mut self, e: &Expr) -> Result<Vec<Option<Dim>>> {
        let Expr::List(items, _) = e else {
            return Err(Error::new(e.span(), "expected a list of dims `[B, 4, -1]`"));
        };
        items
            .iter()
            .map(|it| match it {
                Expr::Name(n)
                    if !matches!(
                        self.env().get(&n.to_string()),
                        Some(Binding::Val(Val::Lit { .. }))
                    ) =>
                {
                    Ok(Some(Dim::Sym(n.to_string())))
                }
                it => match self.int(it)? {
                    -1 => Ok(None),
                    d if d >= 0 => Ok(Some(Dim::Static(d as usize))),
                    d => Err(Error::new(
                        it.span(),
                        format!("dim {d}: only -1 may be negative"),
                    )),
                },
            })
            .collect()
    }
}

/// The result type of an elementwise op on `a` and `b` (before a
/// comparison's bool): equal dtypes (a literal adopts the other's), broadcast dims.
pub(super) fn elementwise_ty(op: &str, a: &Val, b: &Val, span: Span) -> Result<Ty> {
    let (ta, tb) = (ty_of(a), ty_of(b));
    let dtype = match (&ta, &tb) {
        (Some(x), Some(y)) if x.dtype != y.dtype => {
            return Err(Error::new(
                span,
                format!("`{op}` of {x} and {y}: the dtypes differ (cast one with astype)"),
            ))
        }
        (Some(x), _) | (None, Some(x)) => x.dtype,
        (None, None) => DType::F32,
    };
    let empty = Vec::new();
    let da = ta.as_ref().map(|t| &t.dims).unwrap_or(&empty);
    let db = tb.as_ref().map(|t| &t.dims).unwrap_or(&empty);
    let dims = ty::broadcast(da, db).map_err(|m| Error::new(span, format!("`{op}`: {m}")))?;
    Ok(Ty::new(dtype, dims))
}

/// The type of a node value (`None` for a literal).
pub(super) fn ty_of(v: &Val) -> Option<Ty> {
    match v {
        Val::Node { ty, .. } => Some(ty.clone()),
        Val::Lit { .. } => None,
    }
}

/// `a, b, c`
pub(super) fn names(ids: &[Ident]) -> String {
    ids.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `GraphExt` method of an elementwise operator.
fn method_of(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::Rem => "rem",
        BinOp::Pow => "pow",
        BinOp::Eq => "eq",
        BinOp::Ne => "ne",
        BinOp::Lt => "lt",
        BinOp::Le => "le",
        BinOp::Gt => "gt",
        BinOp::Ge => "ge",
        BinOp::MatMul => "mm",
    }
}

/// Folds an operator on two literals (numpy semantics); `None` when it has
/// no scalar meaning here (comparisons, `@`).
fn fold(op: BinOp, x: f64, y: f64) -> Option<f64> {
    Some(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Rem => x - (x / y).floor() * y,
        BinOp::Pow => x.powf(y),
        _ => return None,
    })
}
