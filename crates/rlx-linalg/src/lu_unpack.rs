//! `linalg.lu_unpack{output}`: `P` (output 0), `L` (output 1) or `U`
//! (output 2), `[..., n, n]`, of a packed `linalg.lu` output
//! `[..., n, n + 1]` — one pass over the packed matrix each, instead of
//! slices, masks and a comparison per factor.
//!
//! Derivatives (the unpacking is linear in the packed `LU` block and
//! constant in the permutation column): `L̇ = tril(Ṗk, -1)`, `U̇ = triu(Ṗk)`,
//! `Ṗ = 0`, with `Ṗk` the first `n` columns of the packed tangent;
//! transposed, `L̄` / `Ū` masked the same way and padded with a zero
//! permutation column.

use crate::emit::*;
use crate::host::{by_dtype, get, put, Real};
use rlx_ir::custom::{CustomAttr, CustomAttrs, CustomOp, KernelArg, KernelOut};
use rlx_ir::{Graph, IrError, NodeId, Shape};

fn output(op: &CustomOp) -> Result<i64, String> {
    let k = op.attrs.int_or("output", 0)?;
    if !(0..=2).contains(&k) {
        return Err(format!("output must be 0 (P), 1 (L) or 2 (U), is {k}"));
    }
    Ok(k)
}

/// The op of factor `k`.
pub(crate) fn unpack_op(k: i64) -> CustomOp {
    CustomOp::new(
        crate::ops::LU_UNPACK,
        CustomAttrs::new().with("output", CustomAttr::Int(k)),
    )
}

/// The shape rule: `[..., n, n + 1] -> [..., n, n]`.
pub(crate) fn unpack_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    output(op)?;
    let p = s[0];
    let d = p.dims();
    let r = d.len();
    let ok = matches!(p.dtype(), rlx_ir::DType::F32 | rlx_ir::DType::F64)
        && r >= 2
        && matches!((d[r - 2].as_static(), d[r - 1].as_static()), (Some(n), Some(c)) if c == n + 1);
    if !ok {
        return Err(format!(
            "needs a packed LU [..., n, n + 1] (f32 / f64), given {p}"
        ));
    }
    let mut out = d.to_vec();
    out[r - 1] = d[r - 2].clone();
    Ok(Shape::from_dims(out, p.dtype()))
}

/// The CPU kernel.
pub(crate) fn unpack(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = output(op)?;
    by_dtype!(ins[0].dtype, unpack_t(which, &ins[0], out))
}

fn unpack_t<T: Real>(which: i64, packed: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let d = packed.dims;
    let n = d[d.len() - 2];
    let batch: usize = d[..d.len() - 2].iter().product();
    let (zero, one) = (T::of(0.0), T::of(1.0));
    for i in 0..batch {
        let src = i * n * (n + 1);
        let dst = i * n * n;
        for r in 0..n {
            let row = src + r * (n + 1);
            if which == 0 {
                // A = P L U with P^T A = rows perm of A: P[perm[i], i] = 1.
                (0..n).for_each(|c| put(out, dst + r * n + c, zero));
            }
            for c in 0..n {
                let v = match which {
                    0 => continue,
                    1 if c < r => get::<T>(packed, row + c),
                    1 if c == r => one,
                    2 if c >= r => get::<T>(packed, row + c),
                    _ => zero,
                };
                put(out, dst + r * n + c, v);
            }
        }
        if which == 0 {
            for c in 0..n {
                let p = get::<T>(packed, src + c * (n + 1) + n).f64() as usize;
                if p >= n {
                    return Err(format!("pivot {p} out of range for n = {n}"));
                }
                put(out, dst + p * n + c, one);
            }
        }
    }
    Ok(())
}

fn tri(g: &mut Graph, x: NodeId, lower: bool) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| {
        f64::from(u8::from(if lower { j < i } else { j >= i }))
    })?;
    mul(g, x, m)
}

fn attr_err(op: &CustomOp) -> impl Fn(String) -> IrError + '_ {
    move |reason| IrError::InvalidOp {
        op: op.name.clone(),
        reason,
    }
}

pub(crate) fn unpack_jvp(
    g: &mut Graph,
    op: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let which = output(op).map_err(attr_err(op))?;
    if which == 0 {
        return zeros_like(g, y);
    }
    let n = last_dim(g, y)?;
    let tl = block(g, t[0].expect("a tangent"), (0, n), (0, n))?;
    tri(g, tl, which == 1)
}

pub(crate) fn unpack_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let which = output(op).map_err(attr_err(op))?;
    if which == 0 {
        return Ok(vec![None]);
    }
    let n = last_dim(g, ct)?;
    let c = tri(g, ct, which == 1)?;
    Ok(vec![Some(pad_cols(g, c, n + 1)?)])
}
