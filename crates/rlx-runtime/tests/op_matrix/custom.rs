//! A custom op for the matrix: `matrix.axpy3{alpha}` = `alpha * x^3 + y`,
//! registered here with a cpu kernel and vjp / jvp / vmap rules written as
//! graph builders, so the `Custom` kind goes through every generic check.

use rlx_ir::custom::{
    register_op, CustomAttr, CustomAttrs, CustomOp, KernelArg, KernelOut, OpExtension,
};
use rlx_ir::op::BinaryOp;
use rlx_ir::{Arity, DType, Graph, IrError, NodeId, Op, Shape};

const NAME: &str = "matrix.axpy3";

fn alpha(op: &CustomOp) -> Result<f64, String> {
    op.attrs.float_or("alpha", 1.0)
}

fn shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    alpha(op)?;
    if s[0] != s[1] || !matches!(s[0].dtype(), DType::F32 | DType::F64) {
        return Err(format!(
            "x and y must be the same f32 / f64 shape, are {} and {}",
            s[0], s[1]
        ));
    }
    Ok(s[0].clone())
}

fn kernel(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let a = alpha(op)?;
    fn go<T: Copy + Into<f64>>(
        a: f64,
        x: &[u8],
        y: &[u8],
        o: &mut [u8],
        from: fn(f64) -> T,
        put: fn(T) -> Vec<u8>,
        get: fn(&[u8]) -> T,
    ) {
        let w = std::mem::size_of::<T>();
        for (i, oc) in o.chunks_exact_mut(w).enumerate() {
            let xv: f64 = get(&x[i * w..][..w]).into();
            let yv: f64 = get(&y[i * w..][..w]).into();
            oc.copy_from_slice(&put(from(a * xv * xv * xv + yv)));
        }
    }
    match out.dtype {
        DType::F32 => go::<f32>(
            a,
            ins[0].bytes,
            ins[1].bytes,
            out.bytes,
            |v| v as f32,
            |v| v.to_le_bytes().to_vec(),
            |b| f32::from_le_bytes(b.try_into().expect("4 bytes")),
        ),
        DType::F64 => go::<f64>(
            a,
            ins[0].bytes,
            ins[1].bytes,
            out.bytes,
            |v| v,
            |v| v.to_le_bytes().to_vec(),
            |b| f64::from_le_bytes(b.try_into().expect("8 bytes")),
        ),
        d => return Err(format!("dtype {d}")),
    }
    Ok(())
}

fn mul(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    g.try_node(Op::Binary(BinaryOp::Mul), &[a, b], None)
}

/// `3 alpha x^2 * t`.
fn slope_times(g: &mut Graph, op: &CustomOp, x: NodeId, t: NodeId) -> Result<NodeId, IrError> {
    let a = alpha(op).map_err(|e| IrError::InvalidOp {
        op: NAME.into(),
        reason: e,
    })?;
    let k = g.scalar(3.0 * a, g.shape(x).dtype());
    let xx = mul(g, x, x)?;
    let s = mul(g, xx, k)?;
    mul(g, s, t)
}

fn vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    Ok(vec![Some(slope_times(g, op, x[0], ct)?), Some(ct)])
}

fn jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let dx = t[0].map(|tx| slope_times(g, op, x[0], tx)).transpose()?;
    Ok(match (dx, t[1]) {
        (Some(a), Some(b)) => g.try_node(Op::Binary(BinaryOp::Add), &[a, b], None)?,
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => unreachable!("jvp is called with a tangent"),
    })
}

fn vmap(
    g: &mut Graph,
    op: &CustomOp,
    ins: &[NodeId],
    bat: &[bool],
    b: usize,
) -> Result<NodeId, IrError> {
    // Broadcast the unbatched operand to the batched shape, then apply the op.
    let batched = if bat[0] { ins[0] } else { ins[1] };
    let full = g.shape(batched).clone();
    let mut args = Vec::new();
    for (&x, &bx) in ins.iter().zip(bat) {
        args.push(if bx {
            x
        } else {
            g.try_node(Op::Broadcast, &[x], Some(full.clone()))?
        });
    }
    let _ = b;
    g.custom(op.clone(), &args)
}

/// Registers the op (idempotent).
pub(crate) fn register() {
    register_op(
        OpExtension::new(NAME, "alpha * x^3 + y", Arity::exactly(2), shape)
            .with_kernel("cpu", kernel)
            .with_vjp(vjp)
            .with_jvp(jvp)
            .with_vmap(vmap),
    )
    .expect("register matrix.axpy3");
}

/// The op with `alpha`.
pub(crate) fn op(alpha: f64) -> CustomOp {
    CustomOp::new(
        NAME,
        CustomAttrs::new().with("alpha", CustomAttr::Float(alpha)),
    )
}
