//! Custom ops: operations defined outside the IR (by an extension crate
//! such as `rlx-linalg`) with the same facts a built-in op has — a
//! namespaced name, attributes, a shape / dtype rule, kernels per backend
//! and optional vjp / jvp / vmap rules written as graph builders.
//!
//! A node holds an [`Op::Custom`] with a [`CustomOp`]
//! (name + [`CustomAttrs`]); everything else lives in the [`OpExtension`]
//! registered under that name ([`register_op`], idempotent and
//! thread-safe). Building a node of an unregistered op fails (its shape
//! rule is unknown), as does compiling for a backend without its kernel or
//! asking a transform the extension has no rule for; each error names the op.
//!
//! ```
//! use rlx_ir::custom::{register_op, CustomAttrs, CustomOp, OpExtension};
//! use rlx_ir::{Arity, DType, Graph, Shape};
//! fn same(_: &CustomOp, s: &[&Shape]) -> Result<Shape, String> { Ok(s[0].clone()) }
//! register_op(OpExtension::new("doc.same", "identity", Arity::exactly(1), same)).unwrap();
//! let mut g = Graph::new("g");
//! let x = g.input("x", Shape::new(&[2], DType::F32));
//! let y = g.custom(CustomOp::new("doc.same", CustomAttrs::new()), &[x]).unwrap();
//! assert_eq!(g.node(y).op.mnemonic(), "custom.doc.same");
//! ```

mod attrs;
mod registry;

pub use attrs::{CustomAttr, CustomAttrs};
pub use registry::{
    lookup_op, register_op, registered_ops, BatchRule, HostKernel, JvpRule, KernelArg, KernelOut,
    OpExtension, ShapeRule, VjpRule,
};

use crate::{Graph, IrError, NodeId, Op, Shape};
use std::fmt;

/// The payload of an [`Op::Custom`] node: which extension and its attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomOp {
    /// The registered name, `namespace.op`.
    pub name: String,
    /// The attributes its rules and kernels read.
    pub attrs: CustomAttrs,
}

impl CustomOp {
    /// The op `name` with `attrs`.
    pub fn new(name: impl Into<String>, attrs: CustomAttrs) -> CustomOp {
        CustomOp {
            name: name.into(),
            attrs,
        }
    }

    /// Its registered extension, or an error naming the op.
    pub fn extension(&self) -> Result<std::sync::Arc<OpExtension>, String> {
        lookup_op(&self.name).ok_or_else(|| {
            format!(
                "custom op `{}` is not registered (call its crate's `register()` first)",
                self.name
            )
        })
    }
}

impl fmt::Display for CustomOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "custom.{}{}", self.name, self.attrs)
    }
}

/// A valid name is two or more `.`-separated segments of ASCII letters,
/// digits and `_`, each starting with a letter.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let segs: Vec<&str> = name.split('.').collect();
    let seg_ok = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if segs.len() < 2 || !segs.iter().all(|s| seg_ok(s)) {
        return Err(format!(
            "a custom op name is `namespace.op` (letters, digits, `_`), not {name:?}"
        ));
    }
    Ok(())
}

/// The shape rule of a custom node: the arity and shape rule of its extension.
pub(crate) fn infer_custom(op: &CustomOp, inputs: &[&Shape]) -> Result<Shape, String> {
    let ext = op.extension()?;
    if !ext.arity.admits(inputs.len()) {
        return Err(format!(
            "custom op `{}` expects {} inputs, given {}",
            op.name,
            ext.arity,
            inputs.len()
        ));
    }
    (ext.shape)(op, inputs)
}

impl Graph {
    /// A node of the registered custom op `op` over `inputs`; an
    /// unregistered op or invalid inputs are an error naming the op.
    pub fn custom(&mut self, op: CustomOp, inputs: &[NodeId]) -> Result<NodeId, IrError> {
        self.try_node(Op::Custom(op), inputs, None)
    }
}
