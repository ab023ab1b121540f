//! Reading the attributes of a `collectives.*` op (errors name the attribute).

use crate::collectives::{ReduceKind, ReduceMode};
use crate::group::GroupId;
use rlx_ir::custom::{CustomAttr, CustomOp};
use rlx_ir::DType;

fn attr<'a>(op: &'a CustomOp, name: &str) -> Result<&'a CustomAttr, String> {
    op.attrs
        .get(name)
        .ok_or_else(|| format!("attribute `{name}` is missing"))
}

/// A required non-negative integer attribute.
pub(crate) fn count(op: &CustomOp, name: &str) -> Result<usize, String> {
    match attr(op, name)? {
        CustomAttr::Int(v) => {
            usize::try_from(*v).map_err(|_| format!("attribute `{name}` = {v} is negative"))
        }
        other => Err(format!(
            "attribute `{name}` is a {}, expected an int",
            other.type_name()
        )),
    }
}

fn string<'a>(op: &'a CustomOp, name: &str) -> Result<&'a str, String> {
    match attr(op, name)? {
        CustomAttr::Str(s) => Ok(s),
        other => Err(format!(
            "attribute `{name}` is a {}, expected a string",
            other.type_name()
        )),
    }
}

pub(crate) fn group(op: &CustomOp) -> Result<GroupId, String> {
    let g = count(op, "group")?;
    u16::try_from(g)
        .map(GroupId)
        .map_err(|_| format!("attribute `group` = {g} is not a group id (0..=65535)"))
}

pub(crate) fn kind(op: &CustomOp) -> Result<ReduceKind, String> {
    match string(op, "kind")? {
        "sum" => Ok(ReduceKind::Sum),
        "mean" => Ok(ReduceKind::Mean),
        "max" => Ok(ReduceKind::Max),
        "min" => Ok(ReduceKind::Min),
        other => Err(format!(
            "attribute `kind` = {other:?} is not one of sum, mean, max, min"
        )),
    }
}

pub(crate) fn mode(op: &CustomOp) -> Result<ReduceMode, String> {
    match string(op, "mode")? {
        "ring" => Ok(ReduceMode::Ring),
        "deterministic" => Ok(ReduceMode::Deterministic),
        other => Err(format!(
            "attribute `mode` = {other:?} is not one of ring, deterministic"
        )),
    }
}

/// The `(src, dst)` pairs of `ppermute`.
pub(crate) fn perm(op: &CustomOp) -> Result<Vec<(usize, usize)>, String> {
    match attr(op, "perm")? {
        CustomAttr::Ints(v) if v.len() % 2 == 0 => v
            .chunks(2)
            .map(|p| match (usize::try_from(p[0]), usize::try_from(p[1])) {
                (Ok(s), Ok(d)) => Ok((s, d)),
                _ => Err(format!("attribute `perm` has a negative rank in {p:?}")),
            })
            .collect(),
        CustomAttr::Ints(v) => Err(format!(
            "attribute `perm` has {} entries, expected (src, dst) pairs",
            v.len()
        )),
        other => Err(format!(
            "attribute `perm` is a {}, expected an int list",
            other.type_name()
        )),
    }
}

/// The declared `dims` / `dtype` of `recv`.
pub(crate) fn recv_shape(op: &CustomOp) -> Result<(Vec<usize>, DType), String> {
    let dims = match attr(op, "dims")? {
        CustomAttr::Ints(v) => v
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("attribute `dims` has {d}")))
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(format!(
                "attribute `dims` is a {}, expected an int list",
                other.type_name()
            ))
        }
    };
    let name = string(op, "dtype")?;
    let dtype =
        DType::parse(name).ok_or_else(|| format!("attribute `dtype` = {name:?} is not a dtype"))?;
    Ok((dims, dtype))
}

/// Element types the collectives move.
pub(crate) fn check_dtype(dtype: DType) -> Result<(), String> {
    match dtype {
        DType::F16 | DType::F32 | DType::F64 | DType::I32 => Ok(()),
        other => Err(format!(
            "dtype {other} is not supported by collectives (f16, f32, f64, i32)"
        )),
    }
}
