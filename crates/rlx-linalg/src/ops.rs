//! The ops: their payloads, graph builders and registration.

use crate::{kernels, rules, shapes};
use rlx_ir::custom::{register_op, CustomAttr, CustomAttrs, CustomOp, OpExtension};
use rlx_ir::{Arity, Graph, IrError, NodeId};

/// `linalg.cholesky`.
pub const CHOLESKY: &str = "linalg.cholesky";
/// `linalg.solve_triangular`.
pub const SOLVE_TRIANGULAR: &str = "linalg.solve_triangular";
/// `linalg.solve`.
pub const SOLVE: &str = "linalg.solve";
/// `linalg.inv`.
pub const INV: &str = "linalg.inv";
/// `linalg.det`.
pub const DET: &str = "linalg.det";
/// `linalg.slogdet`.
pub const SLOGDET: &str = "linalg.slogdet";
/// `linalg.eigh`.
pub const EIGH: &str = "linalg.eigh";
/// `linalg.qr`.
pub const QR: &str = "linalg.qr";
/// `linalg.lu`.
pub const LU: &str = "linalg.lu";
/// `linalg.lu_unpack`.
pub const LU_UNPACK: &str = "linalg.lu_unpack";
/// `linalg.svd`.
pub const SVD: &str = "linalg.svd";
/// `linalg.expm`.
pub const EXPM: &str = "linalg.expm";

pub(crate) fn solve_triangular_op(lower: bool, trans: bool) -> CustomOp {
    CustomOp::new(
        SOLVE_TRIANGULAR,
        CustomAttrs::new()
            .with("lower", CustomAttr::Bool(lower))
            .with("trans", CustomAttr::Bool(trans)),
    )
}

pub(crate) fn solve_op(trans: bool) -> CustomOp {
    CustomOp::new(
        SOLVE,
        CustomAttrs::new().with("trans", CustomAttr::Bool(trans)),
    )
}

pub(crate) fn inv_op() -> CustomOp {
    CustomOp::new(INV, CustomAttrs::new())
}

/// Registers every linalg op (idempotent, thread-safe; every builder calls it).
pub fn register() {
    let exts = [
        OpExtension::new(
            CHOLESKY,
            "lower Cholesky factor of (A + A^T) / 2; NaN where not positive definite",
            Arity::exactly(1),
            shapes::same_square,
        )
        .with_kernel("cpu", kernels::cholesky)
        .with_vjp(rules::cholesky_vjp)
        .with_jvp(rules::cholesky_jvp),
        OpExtension::new(
            SOLVE_TRIANGULAR,
            "op(A)^{-1} B for triangular A (attrs lower, trans)",
            Arity::exactly(2),
            shapes::system,
        )
        .with_kernel("cpu", kernels::solve_triangular)
        .with_vjp(rules::solve_triangular_vjp)
        .with_jvp(rules::solve_triangular_jvp),
        OpExtension::new(
            SOLVE,
            "op(A)^{-1} B by LU with partial pivoting (attr trans)",
            Arity::exactly(2),
            shapes::system,
        )
        .with_kernel("cpu", kernels::solve)
        .with_vjp(rules::solve_vjp)
        .with_jvp(rules::solve_jvp),
        OpExtension::new(INV, "A^{-1}", Arity::exactly(1), shapes::same_square)
            .with_kernel("cpu", kernels::inv)
            .with_vjp(rules::inv_vjp)
            .with_jvp(rules::inv_jvp),
        OpExtension::new(DET, "det A", Arity::exactly(1), shapes::batch_scalar)
            .with_kernel("cpu", kernels::det)
            .with_vjp(rules::det_vjp)
            .with_jvp(rules::det_jvp),
        OpExtension::new(
            SLOGDET,
            "sign (output=0) or log|det A| (output=1)",
            Arity::exactly(1),
            shapes::batch_scalar,
        )
        .with_kernel("cpu", kernels::slogdet)
        .with_vjp(rules::slogdet_vjp)
        .with_jvp(rules::slogdet_jvp),
        OpExtension::new(
            EIGH,
            "[V; w^T] (eigenvectors as columns, eigenvalues as the last row) of (A + A^T) / 2",
            Arity::exactly(1),
            crate::eigh::eigh_shape,
        )
        .with_kernel("cpu", crate::eigh::eigh)
        .with_vjp(crate::eigh::eigh_vjp)
        .with_jvp(crate::eigh::eigh_jvp),
        OpExtension::new(
            QR,
            "reduced QR packed [Q | 0; R], [..., m + k, n]",
            Arity::exactly(1),
            crate::qr::qr_shape,
        )
        .with_kernel("cpu", crate::qr::qr)
        .with_vjp(crate::qr::qr_vjp)
        .with_jvp(crate::qr::qr_jvp),
        OpExtension::new(
            SVD,
            "thin SVD packed [U | 0; s^T | 0; Vt], [..., m + 1 + k, n]",
            Arity::exactly(1),
            crate::svd::svd_shape,
        )
        .with_kernel("cpu", crate::svd::svd)
        .with_vjp(crate::svd::svd_vjp)
        .with_jvp(crate::svd::svd_jvp),
        OpExtension::new(
            LU,
            "A = P L U packed [L \\ U | perm], [..., n, n + 1]",
            Arity::exactly(1),
            crate::lu::lu_shape,
        )
        .with_kernel("cpu", crate::lu::lu)
        .with_vjp(crate::lu::lu_vjp)
        .with_jvp(crate::lu::lu_jvp),
        OpExtension::new(
            LU_UNPACK,
            "P (output=0), L (output=1) or U (output=2) of a packed linalg.lu",
            Arity::exactly(1),
            crate::lu_unpack::unpack_shape,
        )
        .with_kernel("cpu", crate::lu_unpack::unpack)
        .with_vjp(crate::lu_unpack::unpack_vjp)
        .with_jvp(crate::lu_unpack::unpack_jvp),
        OpExtension::new(EXPM, "e^A", Arity::exactly(1), shapes::same_square)
            .with_kernel("cpu", crate::expm::expm)
            .with_vjp(crate::expm::expm_vjp)
            .with_jvp(crate::expm::expm_jvp),
    ];
    for ext in exts {
        register_op(ext.with_vmap(rules::vmap_leading)).expect("linalg op names are valid");
    }
}

/// The lower Cholesky factor `L` of `a` (`[..., n, n]`): `L L^T = (a + a^T) / 2`,
/// as `jnp.linalg.cholesky`; all NaN for a batch element that is not
/// positive definite.
pub fn cholesky(g: &mut Graph, a: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(CustomOp::new(CHOLESKY, CustomAttrs::new()), &[a])
}

/// `x` with `op(a) x = b`, `a` `[..., n, n]` triangular (only its `lower`
/// or upper triangle is read), `b` `[..., n, k]`; `op(a) = a^T` when
/// `trans` (`scipy.linalg.solve_triangular(a, b, lower, trans)`). A zero
/// on the diagonal gives inf / NaN, as JAX.
pub fn solve_triangular(
    g: &mut Graph,
    a: NodeId,
    b: NodeId,
    lower: bool,
    trans: bool,
) -> Result<NodeId, IrError> {
    register();
    g.custom(solve_triangular_op(lower, trans), &[a, b])
}

/// `x` with `a x = b`, `a` `[..., n, n]`, `b` `[..., n, k]`
/// (`numpy.linalg.solve` for matrix right-hand sides); a singular `a`
/// gives inf / NaN, as JAX.
pub fn solve(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(solve_op(false), &[a, b])
}

/// `a^{-1}` of `[..., n, n]`; a singular `a` gives inf / NaN, as JAX.
pub fn inv(g: &mut Graph, a: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(inv_op(), &[a])
}

/// `det a` of `[..., n, n]`, shape `[...]`.
pub fn det(g: &mut Graph, a: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(CustomOp::new(DET, CustomAttrs::new()), &[a])
}

/// `(sign, log|det a|)` of `[..., n, n]`, each `[...]`, as
/// `numpy.linalg.slogdet` (`(0, -inf)` for a singular `a`).
pub fn slogdet(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId), IrError> {
    register();
    let of = |k: i64| {
        CustomOp::new(
            SLOGDET,
            CustomAttrs::new().with("output", CustomAttr::Int(k)),
        )
    };
    let sign = g.custom(of(0), &[a])?;
    let logabs = g.custom(of(1), &[a])?;
    Ok((sign, logabs))
}

/// `(w, V)` of the symmetric `(a + a^T) / 2` (`[..., n, n]`): eigenvalues
/// ascending `[..., n]`, eigenvectors as the columns of `[..., n, n]`
/// (`jnp.linalg.eigh`), each column's largest-magnitude entry positive.
/// Derivatives follow JAX; with repeated eigenvalues the eigenvector
/// derivatives are inf / NaN (the eigenvectors are not unique there).
pub fn eigh(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId), IrError> {
    register();
    let packed = g.custom(CustomOp::new(EIGH, CustomAttrs::new()), &[a])?;
    crate::eigh::eigh_unpack(g, packed)
}

/// The reduced QR `(Q [..., m, k], R [..., k, n])`, `k = min(m, n)`, of
/// `a` (`numpy.linalg.qr`), with `R`'s diagonal non-negative. Derivatives
/// (JAX's) need `m >= n` and a full-rank `a`.
pub fn qr(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId), IrError> {
    register();
    let packed = g.custom(CustomOp::new(QR, CustomAttrs::new()), &[a])?;
    crate::qr::qr_unpack(g, a, packed)
}

/// The matrix exponential `e^a` of `[..., n, n]` (`scipy.linalg.expm`).
pub fn expm(g: &mut Graph, a: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(CustomOp::new(EXPM, CustomAttrs::new()), &[a])
}

/// The thin SVD `(U [..., m, k], s [..., k], Vt [..., k, n])` of `a`
/// (`numpy.linalg.svd(a, full_matrices=False)`, `k = min(m, n)`), with
/// fixed column signs; see the `svd` module docs for the derivative rules
/// and their degenerate cases.
pub fn svd(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    crate::svd::svd_nodes(g, a)
}

/// `(P, L, U)` with `a = P L U` for square `a` `[..., n, n]`
/// (`scipy.linalg.lu`, partial pivoting): `P` a permutation matrix, `L`
/// unit lower triangular, `U` upper triangular — all three unpacked from
/// one `linalg.lu` node (one factorization).
pub fn lu(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    register();
    let packed = g.custom(CustomOp::new(LU, CustomAttrs::new()), &[a])?;
    crate::lu::unpack(g, packed)
}

/// `x` with `a x = b` from `lu(a)`'s factors: `U^{-1} L^{-1} P^T b`.
pub fn lu_solve(
    g: &mut Graph,
    (p, l, u): (NodeId, NodeId, NodeId),
    b: NodeId,
) -> Result<NodeId, IrError> {
    let pt = crate::emit::mt(g, p)?;
    let pb = crate::emit::matmul(g, pt, b)?;
    let y = solve_triangular(g, l, pb, true, false)?;
    solve_triangular(g, u, y, false, false)
}
