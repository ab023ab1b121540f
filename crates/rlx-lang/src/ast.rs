//! The syntax tree of an `rlx!` program (what `parse` produces).

use proc_macro2::Span;
use syn::{Ident, LitStr};

/// A whole `rlx! { graph NAME; ... }` invocation.
pub struct Program {
    /// The tokens naming the `rlx_ir` crate in the expansion.
    pub krate: proc_macro2::TokenStream,
    /// `graph NAME;`
    pub name: Ident,
    /// Everything after the `graph` line.
    pub stmts: Vec<Stmt>,
}

/// `input` or `param`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DeclKind {
    /// A runtime input.
    Input,
    /// A trainable / loaded parameter.
    Param,
}

/// One statement.
pub enum Stmt {
    /// `input NAME: TYPE;` / `param NAME: TYPE [as "graph.name"];`
    Decl {
        kind: DeclKind,
        name: Ident,
        ty: TypeAst,
        rename: Option<LitStr>,
    },
    /// `const NAME = NUMBER;`, `const NAME: DTYPE = NUMBER;`, `const NAME: TYPE = [..];`
    Const {
        name: Ident,
        ty: Option<TypeAst>,
        value: Expr,
    },
    /// `let PAT = EXPR;`
    Let { pat: Pat, value: Expr },
    /// `out EXPR;` / `out NAME = EXPR;`
    Out { name: Option<Ident>, value: Expr },
    /// `tap NAME = EXPR;`
    Tap { name: Ident, value: Expr },
    /// `fn NAME(ARGS) = EXPR;` / `fn NAME(ARGS) { let ..; EXPR }`
    Fn(std::rc::Rc<FnDef>),
    /// `repeat N [as PREFIX] { ... }`
    Repeat {
        count: usize,
        prefix: Ident,
        body: Vec<Stmt>,
    },
}

/// The left side of a `let`.
pub enum Pat {
    /// `let x = ..`
    Name(Ident),
    /// `let (a, b) = ..` (only for `scan`)
    Tuple(Vec<Ident>, Span),
}

/// `DTYPE[DIM, ...]`, or a bare `DTYPE` for a scalar.
#[derive(Clone)]
pub struct TypeAst {
    /// `f32`, `i64`, ...
    pub dtype: Ident,
    /// The dims (empty for a scalar).
    pub dims: Vec<DimAst>,
}

/// One declared dim.
#[derive(Clone)]
pub enum DimAst {
    /// `784`
    Static(usize),
    /// `B`
    Sym(Ident),
}

/// A reusable sub-block, inlined at each call.
pub struct FnDef {
    /// Its name.
    pub name: Ident,
    /// Its parameters.
    pub params: Vec<Ident>,
    /// `let` statements before the result.
    pub body: Vec<Stmt>,
    /// The result.
    pub result: Expr,
}

/// Binary operators, Python's precedence (see the grammar in the crate docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    MatMul,
    Pow,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    /// The source spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::MatMul => "@",
            BinOp::Pow => "**",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

/// A call argument, positional or `name = value`.
pub struct Arg {
    /// The keyword, if any.
    pub name: Option<Ident>,
    /// The value.
    pub value: Expr,
}

/// An expression.
pub enum Expr {
    /// A number literal (`is_int`: written without a point or exponent).
    Num {
        value: f64,
        is_int: bool,
        span: Span,
    },
    /// `true` / `false`
    Bool(bool, Span),
    /// A name (a value, a dim symbol, a dtype or `None`, by context).
    Name(Ident),
    /// `-x`
    Neg(Box<Expr>, Span),
    /// `a OP b`; the span is the operator's.
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        span: Span,
    },
    /// `f(args)`; the span is the function name's.
    Call {
        func: Ident,
        args: Vec<Arg>,
        span: Span,
    },
    /// `[a, b, ...]`
    List(Vec<Expr>, Span),
    /// `(a, b, ...)` with at least one comma.
    Tuple(Vec<Expr>, Span),
    /// `scan(init, xs) |carry, x| { ...; (carry, y) }`
    Scan(Box<ScanExpr>),
}

/// `scan(INIT, XS) |CARRY, X| { STMTS; (CARRY_OUT, Y) }`
pub struct ScanExpr {
    /// The `scan` keyword.
    pub span: Span,
    /// Initial carry: one expression or a tuple.
    pub init: Vec<Expr>,
    /// Scanned operands: one expression or a tuple.
    pub xs: Vec<Expr>,
    /// Names of the carry inside the body.
    pub carry: Vec<Ident>,
    /// Names of the per-step slices inside the body.
    pub x: Vec<Ident>,
    /// `let` statements of the body.
    pub body: Vec<Stmt>,
    /// The new carry (one or a tuple).
    pub carry_out: Vec<Expr>,
    /// The per-step outputs (one or a tuple).
    pub ys: Vec<Expr>,
    /// Span of the result tuple.
    pub result_span: Span,
}

impl Expr {
    /// The span an error about this expression points at.
    pub fn span(&self) -> Span {
        match self {
            Expr::Num { span, .. }
            | Expr::Bool(_, span)
            | Expr::Neg(_, span)
            | Expr::Binary { span, .. }
            | Expr::Call { span, .. }
            | Expr::List(_, span)
            | Expr::Tuple(_, span) => *span,
            Expr::Name(i) => i.span(),
            Expr::Scan(s) => s.span,
        }
    }
}
