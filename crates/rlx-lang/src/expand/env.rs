//! Names in scope, values and the graphs being built.

use crate::ast::FnDef;
use crate::ty::Ty;
use proc_macro2::TokenStream;
use std::collections::HashMap;
use std::rc::Rc;
use syn::Ident;

/// A value at expansion time.
#[derive(Clone)]
pub enum Val {
    /// A node: its variable, type and the frame (graph) it lives in.
    Node { var: Ident, ty: Ty, depth: usize },
    /// A number not yet materialised (weakly typed, as a Python scalar in JAX).
    Lit { value: f64, is_int: bool },
}

/// What a name stands for.
#[derive(Clone)]
pub enum Binding {
    /// A value.
    Val(Val),
    /// A `fn`, with the names visible where it was defined.
    Fn(Rc<FnDef>, Rc<Scope>),
}

/// One level of names.
pub type Scope = HashMap<String, Binding>;

/// Nested scopes (`repeat` iterations push one).
pub struct Env {
    pub scopes: Vec<Scope>,
}

impl Env {
    /// An environment of one scope.
    pub fn new(base: Scope) -> Env {
        Env { scopes: vec![base] }
    }

    /// What `name` stands for, innermost scope first.
    pub fn get(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// `let`: rebinds the nearest existing binding (so a `repeat` body
    /// carries `let h = f(h)` to the next layer), else binds in the innermost scope.
    pub fn assign(&mut self, name: &Ident, b: Binding) {
        let key = name.to_string();
        let scope = match self.scopes.iter().rposition(|s| s.contains_key(&key)) {
            Some(i) => &mut self.scopes[i],
            None => self.scopes.last_mut().expect("a scope"),
        };
        scope.insert(key, b);
    }

    /// All visible names flattened into one scope (for `fn` definitions and scan bodies).
    pub fn snapshot(&self) -> Rc<Scope> {
        let mut all = Scope::new();
        for s in &self.scopes {
            all.extend(s.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Rc::new(all)
    }
}

/// One graph under construction: the program's, or a `scan` body.
pub struct Frame {
    /// The graph variable.
    pub g: Ident,
    /// Statements building it.
    pub code: Vec<TokenStream>,
    /// Names in scope.
    pub env: Env,
    /// Values of the enclosing graph used here: (outer variable, inner input variable, type).
    pub captures: Vec<(Ident, Ident, Ty)>,
}

impl Frame {
    /// An empty frame building into `g`.
    pub fn new(g: Ident) -> Frame {
        Frame {
            g,
            code: Vec::new(),
            env: Env::new(Scope::new()),
            captures: Vec::new(),
        }
    }
}
