//! # rlx-lang
//!
//! `rlx! { ... }`: a compact language that declares an `rlx_ir::Graph`.
//! Re-exported as `rlx_tensor::rlx`, `rlx::rlx` and `rlx::prelude::rlx`.
//! Names are checked and shapes inferred over the declared (possibly
//! symbolic) dims *at expansion time*: a mistake is a `compile_error!` at
//! the offending token, and the expansion (plain `rlx_ir::GraphExt` builder
//! calls, evaluating to a `Graph`) cannot fail at run time.
//!
//! ## Example
//!
//! ```
//! use rlx_lang::rlx;
//! let g: rlx_ir::Graph = rlx! {
//!     graph digits_mlp;
//!     input x: f32[B, 784];          // B: a symbolic dim, bound at compile / run time
//!     input y: f32[B, 10];           // one-hot labels
//!     param w1: f32[784, 128];
//!     param b1: f32[128];
//!     param w2: f32[128, 10];
//!     param b2: f32[10];
//!     let h = relu(x @ w1 + b1);
//!     let logits = h @ w2 + b2;
//!     out probs = softmax(logits, axis=-1);
//!     out loss = -mean(sum(y * log_softmax(logits), axis=-1));
//!     tap hidden = h;                // an extra named output, after the `out`s
//! };
//! assert_eq!(g.outputs().len(), 3);
//! ```
//!
//! (Use it as `rlx::rlx!` / `rlx_tensor::rlx!`; `rlx_lang::rlx!` itself
//! expands against `::rlx_ir`.) A shape mistake does not compile; here
//! the error points at the `+`: `cannot broadcast [B, 128] with [10]`.
//!
//! ```compile_fail
//! let g: rlx_ir::Graph = rlx_lang::rlx! {
//!     graph bad;
//!     input x: f32[B, 784];
//!     param w1: f32[784, 128];
//!     param b2: f32[10];
//!     out x @ w1 + b2;
//! };
//! ```
//!
//! ## Grammar
//!
//! ```text
//! program   := "graph" IDENT ";" stmt*
//! stmt      := ("input" | "param") IDENT ":" type ("as" STRING)? ";"
//!            | "const" IDENT (":" type)? "=" expr ";"
//!            | "let" IDENT "=" expr ";"
//!            | "let" "(" IDENT ("," IDENT)* ")" "=" scan ";"
//!            | "out" (IDENT "=")? expr ";"
//!            | "tap" IDENT "=" expr ";"
//!            | "fn" IDENT "(" params ")" ("=" expr ";" | block)
//!            | "repeat" INT ("as" IDENT)? "{" stmt* "}"
//! type      := DTYPE ("[" dim ("," dim)* "]")?      // no brackets: a scalar
//! dim       := INT | IDENT                          // IDENT: a symbolic dim
//! DTYPE     := f32 | f16 | bf16 | f64 | i8 | i16 | i32 | i64 | u8 | u32 | bool
//! block     := "{" ("let" IDENT "=" expr ";")* expr "}"
//! scan      := "scan" "(" init "," xs ")" "|" names "," names "|" block
//!              // init, xs: expr or "(" expr, .. ")"; names: IDENT or "(" IDENT, .. ")"
//!              // the block ends with "(" new_carry "," y ")" (each one or a tuple)
//! expr      := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?
//! sum       := product (("+" | "-") product)*
//! product   := unary (("*" | "/" | "%" | "@") unary)*
//! unary     := "-" unary | power
//! power     := primary ("**" unary)?                // right-associative
//! primary   := NUMBER | "true" | "false" | IDENT | IDENT "(" args ")"
//!            | "(" expr ")" | "(" expr "," .. ")" | "[" expr, .. "]"
//! args      := (expr | IDENT "=" expr), ..          // positional, then keywords
//! ```
//!
//! The precedence is Python's: `-x ** 2` is `-(x ** 2)`, `2 * a @ b`
//! is `(2 * a) @ b`, `a ** b ** c` is `a ** (b ** c)`.
//!
//! ## Semantics
//!
//! - **`input` / `param`** declare graph inputs and parameters (graph name =
//!   the local name, or the `as "..."` string). All names share one
//!   namespace; declaring a name twice in a scope, or two params with one
//!   graph name, is an error.
//! - **`const N = 4;`** is a weakly typed number (usable as a dim in
//!   `reshape`, an axis, or a scalar operand); `const c: f32 = 0.5;` a scalar
//!   node; `const t: f32[2, 2] = [[1, 0], [0, 1]];` a tensor constant.
//! - **`let`** binds (and may rebind) a name. Inside `repeat`, `let h = ..`
//!   of a name bound outside updates it: that is how a layer stack carries
//!   its activation.
//! - **`repeat N as P { .. }`** unrolls its body `N` times; a `param w` in it
//!   is named `P.{i}.w` (`P` defaults to `layers`; nested repeats join with
//!   `.`); `as "blk.{i}.w"` chooses the name, `{i}` being the index.
//! - **`fn f(a, b) = expr;`** / **`fn f(a) { let ..; expr }`** is inlined at
//!   each call; its body sees its parameters and what was declared before
//!   the `fn`. Calls take exactly the declared arguments.
//! - **`scan(init, xs) |c, x| { ..; (c2, y) }`** is `jax.lax.scan`: `x` is
//!   `xs[t]` (the leading dim must be static), `c2` must keep `c`'s type,
//!   and the results are the final carries then the stacked `y`s
//!   (`let (c, ys) = scan(..)`). Tensors of the enclosing graph used in the
//!   body (weights) are captured.
//! - **`out`** statements give the graph's outputs in order (at least one),
//!   then the **`tap`**s; named ones name their node.
//! - **Numbers** are weak, as Python scalars in JAX: `x * 0.5` keeps `x`'s
//!   dtype. Two tensors of different dtypes are an error (`astype`); `/` of
//!   integers gives f32.
//!
//! ## Ops
//!
//! The names of `rlx_tensor` / `jax.numpy` / `jax.nn`, positional or by
//! keyword, defaults as shown:
//!
//! | op | signature |
//! |---|---|
//! | elementwise | `relu tanh exp log sqrt rsqrt sigmoid silu erf sin cos softplus reciprocal floor ceil round abs negative sign square`(x), `gelu(x, approximate=false)` |
//! | binary | `add subtract multiply divide power remainder maximum minimum matmul`(a, b), `where(condition, x, y)` |
//! | reductions | `sum mean max min prod`(x, axis=None, keepdims=false) (axis: an int or a tuple), `argmax argmin`(x, axis, keepdims=false), `logsumexp(x, axis=None, keepdims=false)` |
//! | nn | `softmax log_softmax`(x, axis=-1), `layer_norm(x, gamma=None, beta=None, eps=1e-5, axis=-1)`, `rms_norm(x, gamma=None, eps=1e-6)` |
//! | scans | `cumsum(x, axis, exclusive=false, reverse=false)` |
//! | shape | `reshape(x, [dims])` (ints, symbols, one `-1`), `transpose(x, axes=None)`, `swapaxes(x, axis1, axis2)`, `expand_dims squeeze`(x, axis), `concatenate(arrays, axis=0)` (alias `concat`), `astype(x, dtype)` |
//!
//! ## Errors
//!
//! Each is a `compile_error!` at the offending token: bad syntax; an unknown
//! name, function or dtype; a name used before its declaration (or `let`);
//! a duplicate declaration; a wrong number of arguments (or an unknown
//! keyword); a shape mismatch between declared dims (broadcasting, matmul
//! inner dims, reshape element counts, norm weights, scan carries, axes out
//! of range). Symbolic dims match only themselves (or broadcast with 1).
//! The cases are in `tests/ui/` with their messages.
#![deny(missing_docs)]

mod ast;
mod expand;
mod parse;
mod ty;

use proc_macro::TokenStream;

/// Declares an `rlx_ir::Graph`; see the [crate docs](crate) for the language.
#[proc_macro]
pub fn rlx(input: TokenStream) -> TokenStream {
    let program = syn::parse_macro_input!(input as ast::Program);
    match expand::expand(&program) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
