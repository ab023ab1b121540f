//! Sparse × dense products as RLX custom ops, differentiable in the values
//! and the dense operand.
//!
//! A CSR matrix in a graph is a [`CsrPattern`] (its `indptr` / `indices`
//! as I32 or I64 nodes, its shape in the op's attributes) plus a float
//! node of its values, which autodiff treats like any other input:
//!
//! | builder | op | computes |
//! |---|---|---|
//! | [`spmv`] | `sparse.spmv{nrows, ncols, trans}` | `A x` / `A^T x`, `x` a vector (`scipy`'s `A @ x`) |
//! | [`spmm`] | `sparse.spmm{nrows, ncols, trans}` | `A X` / `A^T X`, `X` `[n, k]` |
//! | [`sddmm`] | `sparse.sddmm{nrows, ncols}` | `s[p] = <a[row p], b[col p]>` on the pattern |
//!
//! All three have CPU kernels, vjp and jvp rules (`sddmm` is the values'
//! cotangent of the products, and its own rules are products, so every
//! order of derivative composes); `spmv` / `spmm` batch (vmap) over the
//! dense operand. Unsorted or duplicated column indices are fine (each
//! stored entry is its own value); a malformed pattern fails at run time
//! with an error naming the position.
//!
//! ```
//! use rlx_ir::{DType, Graph, Shape};
//! use rlx_sparse::graph::{spmv, CsrPattern};
//! let a = rlx_sparse::CsrMatrix::try_new(2, 3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0]).unwrap();
//! let mut g = Graph::new("spmv");
//! let pattern = CsrPattern::constant(&mut g, &a).unwrap();
//! let values = g.input("values", Shape::new(&[3], DType::F64));
//! let x = g.input("x", Shape::new(&[3], DType::F64));
//! let y = spmv(&mut g, &pattern, values, x, false).unwrap();
//! assert_eq!(g.node(y).op.mnemonic(), "custom.sparse.spmv{ncols=3, nrows=2, trans=false}");
//! ```

mod kernels;
mod rules;
mod shapes;

use crate::matrix::CsrMatrix;
use rlx_ir::custom::{register_op, CustomAttr, CustomAttrs, CustomOp, OpExtension};
use rlx_ir::{Arity, DType, Graph, HostTensor, IrError, NodeId, Shape};

/// `sparse.spmv`.
pub const SPMV: &str = "sparse.spmv";
/// `sparse.spmm`.
pub const SPMM: &str = "sparse.spmm";
/// `sparse.sddmm`.
pub const SDDMM: &str = "sparse.sddmm";

/// The structure of a CSR matrix in a graph: `indptr` (`[nrows + 1]`) and
/// `indices` (`[nnz]`) nodes of dtype I32 or I64, and the shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsrPattern {
    /// Row pointers, `[nrows + 1]`.
    pub indptr: NodeId,
    /// Column index of each stored entry, `[nnz]`.
    pub indices: NodeId,
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
}

impl CsrPattern {
    /// Graph inputs `{name}_indptr` and `{name}_indices` of `index`
    /// dtype (I32 or I64) for an `nrows × ncols` matrix with `nnz` entries.
    pub fn input(
        g: &mut Graph,
        name: &str,
        (nrows, ncols): (usize, usize),
        nnz: usize,
        index: DType,
    ) -> Result<CsrPattern, IrError> {
        if !matches!(index, DType::I32 | DType::I64) {
            return Err(IrError::InvalidOp {
                op: "sparse pattern".into(),
                reason: format!("index dtype must be i32 or i64, is {index}"),
            });
        }
        Ok(CsrPattern {
            indptr: g.input(&format!("{name}_indptr"), Shape::new(&[nrows + 1], index)),
            indices: g.input(&format!("{name}_indices"), Shape::new(&[nnz], index)),
            nrows,
            ncols,
        })
    }

    /// `m`'s pattern as constants: I32 (scipy's index width) when every
    /// index fits, else I64. Its stored values, in order, are the values
    /// the ops take.
    pub fn constant<T: crate::Scalar>(
        g: &mut Graph,
        m: &CsrMatrix<T>,
    ) -> Result<CsrPattern, IrError> {
        let (nrows, ncols) = m.shape();
        let narrow = i32::try_from(m.nnz().max(ncols)).is_ok();
        let tensor = |v: &[usize]| -> Result<HostTensor, IrError> {
            if narrow {
                HostTensor::from_vec(v.iter().map(|&i| i as i32).collect(), &[v.len()])
            } else {
                HostTensor::from_vec(v.iter().map(|&i| i as i64).collect(), &[v.len()])
            }
        };
        Ok(CsrPattern {
            indptr: g.constant_tensor(&tensor(m.indptr())?),
            indices: g.constant_tensor(&tensor(
                &m.indices().iter().map(|&j| j as usize).collect::<Vec<_>>(),
            )?),
            nrows,
            ncols,
        })
    }

    fn attrs(&self) -> CustomAttrs {
        let int = |v: usize| CustomAttr::Int(i64::try_from(v).expect("a graph dim fits i64"));
        CustomAttrs::new()
            .with("nrows", int(self.nrows))
            .with("ncols", int(self.ncols))
    }
}

/// The SDDMM on the pattern of the product or SDDMM `op`.
pub(crate) fn sddmm_of(op: &CustomOp) -> CustomOp {
    let mut attrs = CustomAttrs::new();
    for (k, v) in op.attrs.iter().filter(|(k, _)| *k != "trans") {
        attrs.insert(k, v.clone());
    }
    CustomOp::new(SDDMM, attrs)
}

/// Registers `sparse.spmv`, `sparse.spmm` and `sparse.sddmm` (idempotent,
/// thread-safe; every builder calls it).
pub fn register() {
    let exts = [
        OpExtension::new(
            SPMV,
            "A x (attr trans: A^T x) for CSR A = (values, indptr, indices)",
            Arity::exactly(4),
            shapes::spmv,
        )
        .with_kernel("cpu", kernels::product)
        .with_vjp(rules::product_vjp)
        .with_jvp(rules::product_jvp)
        .with_vmap(rules::product_vmap),
        OpExtension::new(
            SPMM,
            "A X (attr trans: A^T X) for CSR A = (values, indptr, indices), X [n, k]",
            Arity::exactly(4),
            shapes::spmm,
        )
        .with_kernel("cpu", kernels::product)
        .with_vjp(rules::product_vjp)
        .with_jvp(rules::product_jvp)
        .with_vmap(rules::product_vmap),
        OpExtension::new(
            SDDMM,
            "s[p] = <a[row p], b[col p]> over the CSR pattern (indptr, indices)",
            Arity::exactly(4),
            shapes::sddmm,
        )
        .with_kernel("cpu", kernels::sddmm)
        .with_vjp(rules::sddmm_vjp)
        .with_jvp(rules::sddmm_jvp),
    ];
    for ext in exts {
        register_op(ext).expect("sparse op names are valid");
    }
}

fn product(
    g: &mut Graph,
    name: &str,
    a: &CsrPattern,
    values: NodeId,
    x: NodeId,
    trans: bool,
) -> Result<NodeId, IrError> {
    register();
    let op = CustomOp::new(name, a.attrs().with("trans", CustomAttr::Bool(trans)));
    g.custom(op, &[values, a.indptr, a.indices, x])
}

/// `A x` (`A^T x` when `trans`) for the CSR matrix of `values` (`[nnz]`)
/// on `a`, `x` a vector of `A`'s columns (rows).
pub fn spmv(
    g: &mut Graph,
    a: &CsrPattern,
    values: NodeId,
    x: NodeId,
    trans: bool,
) -> Result<NodeId, IrError> {
    product(g, SPMV, a, values, x, trans)
}

/// `A X` (`A^T X` when `trans`) for the CSR matrix of `values` on `a`,
/// `X` `[ncols, k]` (`[nrows, k]`).
pub fn spmm(
    g: &mut Graph,
    a: &CsrPattern,
    values: NodeId,
    x: NodeId,
    trans: bool,
) -> Result<NodeId, IrError> {
    product(g, SPMM, a, values, x, trans)
}

/// `s[p] = <lhs[row p], rhs[col p]>` for each stored entry `p` of `a`
/// (`[nnz]`): the dense product `lhs rhs^T` sampled on the pattern; `lhs`
/// `[nrows]` / `[nrows, k]`, `rhs` `[ncols]` / `[ncols, k]`.
pub fn sddmm(g: &mut Graph, a: &CsrPattern, lhs: NodeId, rhs: NodeId) -> Result<NodeId, IrError> {
    register();
    g.custom(
        CustomOp::new(SDDMM, a.attrs()),
        &[a.indptr, a.indices, lhs, rhs],
    )
}
