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
