//! # rlx-macros
//!
//! Procedural macros of RLX (re-exported as `rlx::macros`, and
//! `rlx::{rlx_model, pipeline_schedule}`):
//!
//! - [`macro@rlx_model`]: a struct of `Tensor` params with a `forward` method
//!   becomes a model that compiles once, lazily, and runs on host tensors.
//! - [`pipeline_schedule!`]: stages and their dependencies, put in a
//!   dependency order at compile time; a cycle or an unknown stage is a
//!   compile error.
//!
//! Errors are `compile_error!`s at the span of the offending token; the
//! expected messages are committed under `tests/compile_fail/`.
#![deny(missing_docs)]

mod model;
mod pipeline;

use proc_macro::TokenStream;
use syn::parse_macro_input;

/// Turns a struct of params into a model definition.
///
/// Every field is a param declared with `#[param(shape = [dims..])]`
/// (dims are `usize` expressions: literals or consts), optionally
/// `name = "..."` (the param's name in the graph and in safetensors files;
/// default: the field name) and `dtype = F16` (a `DType` variant; default
/// `F32`). Fields are `Tensor`s. The struct must have an inherent method
/// `forward(&self, x: &Tensor, ...)` taking one to three `&Tensor`s (or one
/// `&[Tensor]`) and returning a `Tensor`, a tuple or a `Vec` of them.
///
/// The macro implements `rlx::tensor::ModelDef` for the struct and adds
/// `Name::model()` (CPU) and `Name::model_with(JitOptions)` (device +
/// `CompileOptions`), which return a `rlx::tensor::Model`: `params()` lists
/// names and shapes, `set_param` / `load_safetensors` set them (unknown
/// names, missing tensors and shape mismatches are named errors), and
/// `forward(&[&HostTensor])` traces and compiles `forward` on its first
/// call and again only for new input shapes.
///
/// Through the `rlx` crate (`use rlx::prelude::*`) write `#[rlx_model]`;
/// this crate's own example names the tensor crate directly:
///
/// ```
/// use rlx_macros::rlx_model;
/// use rlx_tensor::Tensor;
/// use rlx_ir::HostTensor;
///
/// #[rlx_model(crate = ::rlx_tensor)]
/// struct Affine {
///     #[param(shape = [3, 2])]
///     w: Tensor,
///     #[param(shape = [2], name = "bias")]
///     b: Tensor,
/// }
///
/// impl Affine {
///     fn forward(&self, x: &Tensor) -> Tensor {
///         (x.matmul(&self.w) + &self.b).relu()
///     }
/// }
///
/// let mut m = Affine::model();
/// assert_eq!(m.params()[1].0, "bias");
/// m.set_param("w", &HostTensor::from_vec(vec![1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2])?)?;
/// m.set_param("bias", &HostTensor::from_vec(vec![0.0f32, -10.0], &[2])?)?;
/// let x = HostTensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3])?;
/// // [1, 2, 3] @ w = [4, 5]; + bias = [4, -5]; relu = [4, 0].
/// assert_eq!(m.forward(&[&x])?[0].to_vec::<f32>()?, vec![4.0, 0.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `#[rlx_model(crate = path)]` names where the tensor DSL lives when it
/// is not `::rlx::tensor` (e.g. `crate = ::rlx_tensor`).
#[proc_macro_attribute]
pub fn rlx_model(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(args as model::ModelArgs);
    let item = match syn::parse::<syn::ItemStruct>(item) {
        Ok(s) => s,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                "#[rlx_model] goes on a struct whose fields are the model's params",
            )
            .to_compile_error()
            .into()
        }
    };
    model::expand(args, item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares pipeline stages and what each waits for; expands to a unit
/// struct whose consts hold a dependency order computed at compile time.
///
/// ```text
/// pipeline_schedule! { [attrs] [vis] Name { stage => [deps, ..], .. } }
/// ```
///
/// `Name::ORDER` lists the stages so that each comes after its
/// dependencies (ready stages keep declaration order), `Name::DEPENDENCIES`
/// and `Name::LEVELS` follow `ORDER` (the level is the longest dependency
/// chain: stages of one level may run at once), `Name::STAGES` is the
/// declaration order. A cycle is a compile error naming its stages in order;
/// an unknown or duplicated stage name is an error at its span.
///
/// ```
/// rlx_macros::pipeline_schedule! {
///     pub Attention {
///         out     => [softmax, v_proj],
///         q_proj  => [],
///         k_proj  => [],
///         v_proj  => [],
///         scores  => [q_proj, k_proj],
///         softmax => [scores],
///     }
/// }
/// assert_eq!(
///     Attention::ORDER,
///     ["q_proj", "k_proj", "v_proj", "scores", "softmax", "out"]
/// );
/// assert_eq!(Attention::LEVELS, [0, 0, 0, 1, 2, 3]);
/// ```
#[proc_macro]
pub fn pipeline_schedule(input: TokenStream) -> TokenStream {
    let s = parse_macro_input!(input as pipeline::Schedule);
    pipeline::expand(s)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
