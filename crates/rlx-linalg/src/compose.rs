//! Functions built from other ops (no kernel of their own): their
//! derivatives are those of the ops they emit.

use crate::emit::{mask, matmul};
use rlx_ir::{Graph, IrError, NodeId, Op};

/// `a^k` for `[..., n, n]` (`numpy.linalg.matrix_power`): the identity for
/// `k = 0`, repeated squaring for `k > 0`, the same on `inv(a)` for `k < 0`.
pub fn matrix_power(g: &mut Graph, a: NodeId, k: i64) -> Result<NodeId, IrError> {
    let s = g.shape(a).clone();
    let d = s.dims();
    let n = d.last().and_then(|x| x.as_static());
    if d.len() < 2 || d[d.len() - 2] != d[d.len() - 1] || n.is_none() {
        return Err(IrError::InvalidOp {
            op: "linalg.matrix_power".into(),
            reason: format!("needs static square matrices [..., n, n], given {s}"),
        });
    }
    if k == 0 {
        let eye = mask(g, n.unwrap_or(0), s.dtype(), |i, j| {
            f64::from(u8::from(i == j))
        })?;
        return g.try_node(Op::Broadcast, &[eye], Some(s));
    }
    let mut base = if k < 0 { crate::inv(g, a)? } else { a };
    let mut e = k.unsigned_abs();
    let mut acc: Option<NodeId> = None;
    loop {
        if e & 1 == 1 {
            acc = Some(match acc {
                None => base,
                Some(x) => matmul(g, x, base)?,
            });
        }
        e >>= 1;
        if e == 0 {
            break;
        }
        base = matmul(g, base, base)?;
    }
    Ok(acc.expect("k != 0"))
}

/// The least-squares solution of `a x = b` for `a` `[..., m, n]` of full
/// column rank (`m >= n`) and `b` `[..., m, k]`: `R^{-1} Q^T b` from the
/// reduced QR (`numpy.linalg.lstsq(a, b)[0]` for such `a`; a
/// rank-deficient `a` gives inf / NaN instead of numpy's minimum-norm
/// solution).
pub fn lstsq(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    let (q, r) = crate::qr(g, a)?;
    let qt = crate::emit::mt(g, q)?;
    let qtb = matmul(g, qt, b)?;
    crate::solve_triangular(g, r, qtb, false, false)
}

/// The pseudo-inverse of `a` `[..., m, n]` (`numpy.linalg.pinv(a, rcond)`):
/// `V diag(s+) U^T` from the thin SVD, `s+ = 1 / s` where `s > rcond *
/// max(s)` and 0 elsewhere. Derivatives go through the SVD's, so they
/// need distinct non-zero singular values (a full-rank `a`).
pub fn pinv(g: &mut Graph, a: NodeId, rcond: f64) -> Result<NodeId, IrError> {
    use rlx_ir::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
    let (u, s, vt) = crate::svd(g, a)?;
    let sh = g.shape(s).clone();
    let r = sh.rank();
    let smax = g.try_node(
        Op::Reduce {
            op: ReduceOp::Max,
            axes: vec![r - 1],
            keep_dim: true,
        },
        &[s],
        None,
    )?;
    let rc = g.scalar(rcond, sh.dtype());
    let cutoff = g.try_node(Op::Binary(BinaryOp::Mul), &[smax, rc], None)?;
    let keep = g.try_node(Op::Compare(CmpOp::Gt), &[s, cutoff], None)?;
    let one = g.scalar(1.0, sh.dtype());
    let safe = g.try_node(Op::Select, &[keep, s, one], None)?;
    let inv = g.try_node(Op::Unary(UnaryOp::Reciprocal), &[safe], None)?;
    let zero = g.scalar(0.0, sh.dtype());
    let zeros = g.try_node(Op::Broadcast, &[zero], Some(sh.clone()))?;
    let sinv = g.try_node(Op::Select, &[keep, inv, zeros], None)?;
    // V diag(s+) U^T = (Vt^T * s+ as a row) @ U^T
    let mut row = sh.dims().to_vec();
    row.insert(r - 1, rlx_ir::Dim::Static(1));
    let sinv = g.try_node(
        Op::Reshape,
        &[sinv],
        Some(rlx_ir::Shape::from_dims(row, sh.dtype())),
    )?;
    let v = crate::emit::mt(g, vt)?;
    let vs = g.try_node(Op::Binary(BinaryOp::Mul), &[v, sinv], None)?;
    let ut = crate::emit::mt(g, u)?;
    matmul(g, vs, ut)
}
