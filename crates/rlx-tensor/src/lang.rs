//! `rlx!`: the `rlx-lang` language, expanded against this crate's `rlx_ir`
//! so callers need no direct `rlx-ir` dependency.

/// Declares an [`rlx_ir::Graph`] in the compact `rlx!` language: `graph`,
/// `input` / `param` with (symbolic) shapes, `const`, `let`, `out`, `tap`,
/// `fn`, `repeat`, `scan`, `@` with Python's precedence. Names and shapes
/// are checked at expansion time (a mistake is a compile error at the
/// offending token). The grammar and examples are in the `rlx-lang` crate
/// docs.
///
/// ```
/// let g: rlx_tensor::Graph = rlx_tensor::rlx! {
///     graph mlp;
///     input x: f32[B, 784];
///     param w1: f32[784, 128];
///     param b1: f32[128];
///     param w2: f32[128, 10];
///     param b2: f32[10];
///     let h = relu(x @ w1 + b1);
///     out softmax(h @ w2 + b2, axis=-1);
/// };
/// assert_eq!(g.params().len(), 4);
/// ```
#[macro_export]
macro_rules! rlx {
    ($($program:tt)*) => {
        $crate::__lang::rlx! { @crate $crate::__lang::rlx_ir; $($program)* }
    };
}

#[doc(hidden)]
pub mod __lang {
    pub use rlx_ir;
    pub use rlx_lang::rlx;
}
