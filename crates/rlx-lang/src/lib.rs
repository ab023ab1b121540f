//! # rlx-lang
//!
//! `rlx! { ... }`: a compact language that declares an [`rlx_ir::Graph`].
//! Re-exported as `rlx_tensor::rlx`, `rlx::rlx` and `rlx::prelude::rlx`.
//! Names are checked and shapes inferred over the declared (possibly
//! symbolic) dims *at expansion time*: a mistake is a `compile_error!` at
//! the offending token, and the expansion (plain `rlx_ir::GraphExt` builder
//! calls, evaluating to a `Graph`) cannot fail at run time.
//!
//! GRAMMAR_PLACEHOLDER
#![deny(missing_docs)]

mod ast;
mod expand;
mod parse;
mod ty;

use proc_macro::TokenStream;

/// Declares an [`rlx_ir::Graph`]; see the [crate docs](crate) for the language.
#[proc_macro]
pub fn rlx(input: TokenStream) -> TokenStream {
    let program = syn::parse_macro_input!(input as ast::Program);
    match expand::expand(&program) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
