//! Elementwise family: unary, binary, compare, select, cast.

use super::{arity, broadcast_dims, InferResult};
use crate::op::{BinaryOp, CmpOp, UnaryOp};
use crate::{DType, Shape};

pub(crate) fn infer_unary(u: UnaryOp, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    let d = x.dtype();
    let ok = match u {
        UnaryOp::Not => d == DType::Bool || d.is_int(),
        UnaryOp::Neg => d != DType::Bool,
        UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Sign => d != DType::Bool && d != DType::C64,
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => d.is_float() || d.is_int(),
        _ => d.is_float(),
    };
    if !ok {
        return Err(format!(
            "{} is not defined for dtype {d} (input {x})",
            u.name()
        ));
    }
    Ok(x.clone())
}

pub(crate) fn infer_binary(b: BinaryOp, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 2)?;
    let (x, y) = (inputs[0], inputs[1]);
    same_dtype(x, y)?;
    let d = x.dtype();
    let ok = match b {
        BinaryOp::Add | BinaryOp::Mul => true,
        BinaryOp::Sub | BinaryOp::Div => d != DType::Bool,
        BinaryOp::Pow | BinaryOp::Mod | BinaryOp::Max | BinaryOp::Min => {
            d != DType::C64 && (d != DType::Bool || matches!(b, BinaryOp::Max | BinaryOp::Min))
        }
        BinaryOp::Atan2 => d.is_float(),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => d == DType::Bool || d.is_int(),
    };
    if !ok {
        return Err(format!("{} is not defined for dtype {d}", b.name()));
    }
    Ok(Shape::from_dims(broadcast_dims(x.dims(), y.dims())?, d))
}

pub(crate) fn infer_compare(c: CmpOp, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 2)?;
    let (x, y) = (inputs[0], inputs[1]);
    same_dtype(x, y)?;
    if x.dtype() == DType::C64 && !matches!(c, CmpOp::Eq | CmpOp::Ne) {
        return Err(format!("{} is not defined for complex values", c.name()));
    }
    Ok(Shape::from_dims(
        broadcast_dims(x.dims(), y.dims())?,
        DType::Bool,
    ))
}

pub(crate) fn infer_select(inputs: &[&Shape]) -> InferResult {
    arity(inputs, 3, 3)?;
    let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
    if c.dtype() != DType::Bool {
        return Err(format!("the condition must be bool, is {c}"));
    }
    same_dtype(a, b)?;
    let dims = broadcast_dims(&broadcast_dims(c.dims(), a.dims())?, b.dims())?;
    Ok(Shape::from_dims(dims, a.dtype()))
}

pub(crate) fn infer_cast(inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 1, 1)?;
    if inputs[0].dims() != declared.dims() {
        return Err(format!(
            "cast keeps the dims: input {} vs declared {declared}",
            inputs[0]
        ));
    }
    Ok(declared.clone())
}

fn same_dtype(x: &Shape, y: &Shape) -> Result<(), String> {
    if x.dtype() != y.dtype() {
        return Err(format!(
            "operands have different dtypes: {x} vs {y} (cast one, or use the promoting GraphExt builders)"
        ));
    }
    Ok(())
}
