//! `scan(init, xs) |carry, x| { ..; (new_carry, y) }` -> `GraphExt::scan`
//! with a body graph. Nodes of the enclosing graph used in the body are
//! captured: passed in as extra carries that the body returns unchanged.

use super::env::{Binding, Env, Frame, Val};
use super::expr::names;
use super::Expander;
use crate::ast::ScanExpr;
use crate::ty::{Dim, Ty};
use quote::quote;
use syn::{Error, Result};

/// A node variable and its type.
type Typed = (syn::Ident, Ty);

impl Expander {
    /// Expands a scan; its values are the final carries, then the stacked ys.
    pub(super) fn scan(&mut self, s: &ScanExpr) -> Result<Vec<Val>> {
        if s.init.len() != s.carry.len() || s.xs.len() != s.x.len() {
            return Err(Error::new(
                s.span,
                format!(
                    "wrong number of arguments: scan has {} init value(s) for carry ({}) and {} scanned operand(s) for ({})",
                    s.init.len(),
                    names(&s.carry),
                    s.xs.len(),
                    names(&s.x)
                ),
            ));
        }
        if s.xs.is_empty() {
            return Err(Error::new(
                s.span,
                "scan needs at least one scanned operand (its leading dim is the length)",
            ));
        }
        let mut init = Vec::new();
        for e in &s.init {
            let v = self.expr(e)?;
            init.push(self.node(&v, e.span())?);
        }
        let mut xs = Vec::new();
        let mut length: Option<usize> = None;
        for e in &s.xs {
            let v = self.expr(e)?;
            let (var, t) = self.node(&v, e.span())?;
            let n = match t.dims.first() {
                Some(Dim::Static(n)) => *n,
                _ => {
                    return Err(Error::new(
                        e.span(),
                        format!("scan over {t}: the scanned operand needs a static leading dim"),
                    ))
                }
            };
            if length.is_some_and(|l| l != n) {
                return Err(Error::new(
                    e.span(),
                    format!(
                        "shape mismatch: scanned operands of lengths {} and {n}",
                        length.unwrap_or(0)
                    ),
                ));
            }
            length = Some(n);
            xs.push((var, Ty::new(t.dtype, t.dims[1..].to_vec())));
        }

        // The body: a new frame seeing every name in scope, plus carry and x.
        let base = self.env().snapshot();
        let g = self.fresh("body_g");
        let mut frame = Frame::new(g.clone());
        frame.env = Env::new((*base).clone());
        frame.env.scopes.push(Default::default());
        self.frames.push(frame);
        let depth = self.depth();
        let mut inputs = Vec::new();
        for (names, vals) in [(&s.carry, &init), (&s.x, &xs)] {
            for (n, (_, t)) in names.iter().zip(vals) {
                let var = self.fresh("in");
                inputs.push((var.clone(), t.clone()));
                self.env().scopes[1].insert(
                    n.to_string(),
                    Binding::Val(Val::Node {
                        var,
                        ty: t.clone(),
                        depth,
                    }),
                );
            }
        }
        let body = self.scan_body(s, &init);
        let frame = self.frames.pop().expect("the body frame");
        let (carry_out, ys) = body?;
        let ys_vars = ys.iter().map(|y| &y.0);

        let k = self.krate.clone();
        let (carry_in, x_in) = inputs.split_at(init.len());
        let decl = |(i, (var, t)): (usize, &Typed)| {
            let name = format!("in{i}");
            let shape = t.tokens(&k);
            quote!(let #var = #g.input(#name, #shape);)
        };
        let caps: Vec<Typed> = frame
            .captures
            .iter()
            .map(|c| (c.1.clone(), c.2.clone()))
            .collect();
        let decls = carry_in
            .iter()
            .chain(&caps)
            .chain(x_in)
            .enumerate()
            .map(decl);
        let cap_inner = caps.iter().map(|c| &c.0);
        let cap_outer: Vec<_> = frame.captures.iter().map(|c| c.0.clone()).collect();
        let code = frame.code;
        let body_g = self.fresh("body");
        let outer = self.g();
        let init_vars = init.iter().map(|i| &i.0);
        let x_vars = xs.iter().map(|x| &x.0);
        let (carry_res, ys_res) = (self.fresh("carry"), self.fresh("ys"));
        self.frame().code.push(quote! {
            let #body_g = {
                let mut #g = #k::Graph::new("scan_body");
                #(#decls)*
                #(#code)*
                #g.set_outputs(::std::vec![#(#carry_out,)* #(#cap_inner,)* #(#ys_vars),*]);
                #g
            };
            let (#carry_res, #ys_res) = #outer.scan(
                #body_g,
                &[#(#init_vars,)* #(#cap_outer),*],
                &[#(#x_vars),*],
            );
        });
        let mut out = Vec::new();
        for (i, (_, t)) in init.iter().enumerate() {
            let r = &carry_res;
            out.push(self.push(t.clone(), |_| quote!(#r[#i])));
        }
        for (i, (_, t)) in ys.into_iter().enumerate() {
            let mut dims = vec![Dim::Static(length.expect("at least one xs"))];
            dims.extend(t.dims);
            let r = &ys_res;
            out.push(self.push(Ty::new(t.dtype, dims), |_| quote!(#r[#i])));
        }
        Ok(out)
    }

    /// The body's statements and results; the new carries must keep the carry types.
    fn scan_body(&mut self, s: &ScanExpr, init: &[Typed]) -> Result<(Vec<syn::Ident>, Vec<Typed>)> {
        self.stmts(&s.body)?;
        if s.carry_out.len() != init.len() {
            return Err(Error::new(
                s.result_span,
                format!(
                    "the body returns {} carry value(s), the scan carries {}",
                    s.carry_out.len(),
                    init.len()
                ),
            ));
        }
        let mut carry = Vec::new();
        for (e, (_, want)) in s.carry_out.iter().zip(init) {
            let v = self.expr(e)?;
            let (var, t) = self.node(&v, e.span())?;
            if t != *want {
                return Err(Error::new(
                    e.span(),
                    format!("shape mismatch: the new carry is {t}, the carry is {want}"),
                ));
            }
            carry.push(var);
        }
        let mut ys = Vec::new();
        for e in &s.ys {
            let v = self.expr(e)?;
            ys.push(self.node(&v, e.span())?);
        }
        Ok((carry, ys))
    }
}
