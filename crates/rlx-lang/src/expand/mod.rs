//! [`crate::ast`] -> Rust that builds the graph through `rlx_ir::GraphExt`.
//!
//! Every value is tracked with its expansion-time [`Ty`], so shape and
//! name errors are reported here, at the offending token, and the emitted
//! builder calls cannot fail at run time.

mod calls;
mod env;
mod expr;
mod scan;

use crate::ast::{DeclKind, DimAst, Pat, Program, Stmt, TypeAst};
use crate::ty::{DType, Dim, Ty};
use env::{Binding, Env, Frame, Val};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::HashSet;
use syn::{Error, Ident, Result};

/// Expands a parsed program to an expression of type `rlx_ir::Graph`.
pub fn expand(p: &Program) -> Result<TokenStream> {
    let mut x = Expander::new(p);
    x.stmts(&p.stmts)?;
    if x.outs.is_empty() {
        return Err(Error::new(
            p.name.span(),
            format!("graph `{}` has no `out` statement", p.name),
        ));
    }
    let krate = &p.krate;
    let name = p.name.to_string();
    let frame = x.frames.pop().expect("the top frame");
    let (g, code) = (frame.g, frame.code);
    let outs = x.outs.iter().chain(&x.taps).map(|(v, _)| v);
    let names = x
        .outs
        .iter()
        .chain(&x.taps)
        .filter_map(|(v, n)| n.as_ref().map(|n| quote!(#g.set_name(#v, #n);)));
    Ok(quote! {{
        use #krate::GraphExt as _;
        let mut #g = #krate::Graph::new(#name);
        #(#code)*
        #(#names)*
        #g.set_outputs(::std::vec![#(#outs),*]);
        #g
    }})
}

/// The expansion state.
pub(crate) struct Expander {
    /// Path of the `rlx_ir` crate.
    krate: TokenStream,
    /// Graphs being built: the program's, then one per nested `scan` body.
    frames: Vec<Frame>,
    /// Counter for fresh identifiers.
    next_id: usize,
    /// Every name declared anywhere (to tell "used before" from "unknown").
    declared: HashSet<String>,
    /// Graph-level names of inputs and params already used.
    graph_names: HashSet<String>,
    /// `repeat` prefixes in force (`layers.0`, ...).
    prefixes: Vec<String>,
    /// Outputs: node variable and optional name.
    outs: Vec<(Ident, Option<String>)>,
    /// Taps (named outputs after the `out`s).
    taps: Vec<(Ident, Option<String>)>,
    /// Tap names already used.
    tap_names: HashSet<String>,
}

impl Expander {
    fn new(p: &Program) -> Expander {
        let mut declared = HashSet::new();
        collect_declared(&p.stmts, &mut declared);
        Expander {
            krate: p.krate.clone(),
            frames: vec![Frame::new(format_ident!(
                "__rlx_g0",
                span = Span::mixed_site()
            ))],
            next_id: 0,
            declared,
            graph_names: HashSet::new(),
            prefixes: Vec::new(),
            outs: Vec::new(),
            taps: Vec::new(),
            tap_names: HashSet::new(),
        }
    }

    /// A fresh hygienic identifier.
    fn fresh(&mut self, what: &str) -> Ident {
        self.next_id += 1;
        format_ident!("__rlx_{}{}", what, self.next_id, span = Span::mixed_site())
    }

    fn frame(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame")
    }

    fn env(&mut self) -> &mut Env {
        &mut self.frame().env
    }

    /// The graph variable of the innermost frame.
    fn g(&self) -> Ident {
        self.frames.last().expect("a frame").g.clone()
    }

    fn depth(&self) -> usize {
        self.frames.len() - 1
    }

    /// Emits `let v = CALL;` in the current graph; `call` is given the graph variable.
    fn push(&mut self, ty: Ty, call: impl FnOnce(&Ident) -> TokenStream) -> Val {
        let g = self.g();
        let var = self.fresh("n");
        let call = call(&g);
        self.frame().code.push(quote!(let #var = #call;));
        Val::Node {
            var,
            ty,
            depth: self.depth(),
        }
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<()> {
        stmts.iter().try_for_each(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Decl {
                kind,
                name,
                ty,
                rename,
            } => self.decl(*kind, name, ty, rename.as_ref()),
            Stmt::Const { name, ty, value } => {
                let v = self.constant(ty.as_ref(), value)?;
                self.declare(name, Binding::Val(v))
            }
            Stmt::Let { pat, value } => self.let_(pat, value),
            Stmt::Out { name, value } => {
                let v = self.expr(value)?;
                let var = self.var(&v, value.span())?;
                self.outs.push((var, name.as_ref().map(|n| n.to_string())));
                Ok(())
            }
            Stmt::Tap { name, value } => {
                if !self.tap_names.insert(name.to_string()) {
                    return Err(Error::new(
                        name.span(),
                        format!("duplicate declaration: tap `{name}` is already declared"),
                    ));
                }
                let v = self.expr(value)?;
                let var = self.var(&v, value.span())?;
                self.taps.push((var, Some(name.to_string())));
                Ok(())
            }
            Stmt::Fn(f) => {
                let snapshot = self.env().snapshot();
                self.declare(&f.name, Binding::Fn(f.clone(), snapshot))
            }
            Stmt::Repeat {
                count,
                prefix,
                body,
            } => {
                for i in 0..*count {
                    let outer = self
                        .prefixes
                        .last()
                        .map(|p| format!("{p}."))
                        .unwrap_or_default();
                    self.prefixes.push(format!("{outer}{prefix}.{i}"));
                    self.env().scopes.push(Default::default());
                    let r = self.stmts(body);
                    self.env().scopes.pop();
                    self.prefixes.pop();
                    r?;
                }
                Ok(())
            }
        }
    }

    /// Binds `name` in the innermost scope; a name already declared there is an error.
    fn declare(&mut self, name: &Ident, b: Binding) -> Result<()> {
        let scope = self.env().scopes.last_mut().expect("a scope");
        if scope.contains_key(&name.to_string()) {
            return Err(Error::new(
                name.span(),
                format!("duplicate declaration: `{name}` is already declared in this scope"),
            ));
        }
        scope.insert(name.to_string(), b);
        Ok(())
    }

    fn decl(
        &mut self,
        kind: DeclKind,
        name: &Ident,
        ty: &TypeAst,
        rename: Option<&syn::LitStr>,
    ) -> Result<()> {
        if self.depth() > 0 {
            return Err(Error::new(
                name.span(),
                "`input` / `param` inside a scan body",
            ));
        }
        let t = self.ty(ty)?;
        let prefix = self.prefixes.last().cloned();
        let graph_name = match (rename, &prefix) {
            // `{i}`: the index of the innermost `repeat`.
            (Some(s), Some(p)) => s.value().replace("{i}", p.rsplit('.').next().unwrap_or("")),
            (Some(s), None) => s.value(),
            (None, Some(p)) => format!("{p}.{name}"),
            (None, None) => name.to_string(),
        };
        if !self.graph_names.insert(graph_name.clone()) {
            return Err(Error::new(
                rename.map(|r| r.span()).unwrap_or(name.span()),
                format!("duplicate declaration: the graph already has an input or param named `{graph_name}`"),
            ));
        }
        let shape = t.tokens(&self.krate);
        let method = match kind {
            DeclKind::Input => quote!(input),
            DeclKind::Param => quote!(param),
        };
        let v = self.push(t, |g| quote!(#g.#method(#graph_name, #shape)));
        self.declare(name, Binding::Val(v))
    }

    /// A declared type: known dtype, dims as written.
    fn ty(&self, t: &TypeAst) -> Result<Ty> {
        let dtype = DType::parse(&t.dtype.to_string()).ok_or_else(|| {
            Error::new(
                t.dtype.span(),
                format!(
                    "unknown dtype `{}` (one of {})",
                    t.dtype,
                    DType::spellings()
                ),
            )
        })?;
        let dims = t
            .dims
            .iter()
            .map(|d| match d {
                DimAst::Static(n) => Dim::Static(*n),
                DimAst::Sym(s) => Dim::Sym(s.to_string()),
            })
            .collect();
        Ok(Ty::new(dtype, dims))
    }

    fn let_(&mut self, pat: &Pat, value: &crate::ast::Expr) -> Result<()> {
        match (pat, value) {
            (Pat::Tuple(names, span), crate::ast::Expr::Scan(s)) => {
                let vals = self.scan(s)?;
                if vals.len() != names.len() {
                    return Err(Error::new(
                        *span,
                        format!(
                            "this scan gives {} values (carries, then ys), the pattern binds {}",
                            vals.len(),
                            names.len()
                        ),
                    ));
                }
                for (n, v) in names.iter().zip(vals) {
                    self.env().assign(n, Binding::Val(v));
                }
                Ok(())
            }
            (Pat::Tuple(_, span), _) => Err(Error::new(
                *span,
                "only a `scan` result is destructured with `let (..) =`",
            )),
            (Pat::Name(n), _) => {
                let v = self.expr(value)?;
                self.env().assign(n, Binding::Val(v));
                Ok(())
            }
        }
    }
}

/// Every name a program declares anywhere (for "used before its declaration").
fn collect_declared(stmts: &[Stmt], out: &mut HashSet<String>) {
    for s in stmts {
        match s {
            Stmt::Decl { name, .. } | Stmt::Const { name, .. } => {
                out.insert(name.to_string());
            }
            Stmt::Let { pat, .. } => match pat {
                Pat::Name(n) => {
                    out.insert(n.to_string());
                }
                Pat::Tuple(ns, _) => out.extend(ns.iter().map(|n| n.to_string())),
            },
            Stmt::Fn(f) => {
                out.insert(f.name.to_string());
                collect_declared(&f.body, out);
            }
            Stmt::Repeat { body, .. } => collect_declared(body, out),
            Stmt::Out { .. } | Stmt::Tap { .. } => {}
        }
    }
}
