//! Fallible node builders the derivative rules share.

use rlx_ir::op::{BinaryOp, ReduceOp};
use rlx_ir::{DType, Dim, Graph, HostTensor, IrError, NodeId, Op, Shape};

pub(crate) fn bin(g: &mut Graph, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    g.try_node(Op::Binary(op), &[a, b], None)
}

pub(crate) fn add(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    bin(g, BinaryOp::Add, a, b)
}

pub(crate) fn sub(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    bin(g, BinaryOp::Sub, a, b)
}

pub(crate) fn mul(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    bin(g, BinaryOp::Mul, a, b)
}

/// `x * v` for a scalar `v`.
pub(crate) fn scale(g: &mut Graph, x: NodeId, v: f64) -> Result<NodeId, IrError> {
    let s = g.scalar(v, g.shape(x).dtype());
    mul(g, x, s)
}

pub(crate) fn matmul(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    g.try_node(Op::MatMul, &[a, b], None)
}

/// The matrix transpose: the last two axes swapped.
pub(crate) fn mt(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let r = g.shape(x).rank();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    g.try_node(Op::Transpose { perm }, &[x], None)
}

/// `(x + x^T) / 2`.
pub(crate) fn sym(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let t = mt(g, x)?;
    let s = add(g, x, t)?;
    scale(g, s, 0.5)
}

/// The sum over the last two axes.
pub(crate) fn sum_last2(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let r = g.shape(x).rank();
    g.try_node(
        Op::Reduce {
            op: ReduceOp::Sum,
            axes: vec![r - 2, r - 1],
            keep_dim: false,
        },
        &[x],
        None,
    )
}

/// `x` of dims `[...]` as `[..., 1, 1]`.
pub(crate) fn unsqueeze2(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(x).clone();
    let mut dims = s.dims().to_vec();
    dims.extend([Dim::Static(1), Dim::Static(1)]);
    g.try_node(Op::Reshape, &[x], Some(Shape::from_dims(dims, s.dtype())))
}

/// An `[n, n]` constant with entries `f(i, j)`.
pub(crate) fn mask(
    g: &mut Graph,
    n: usize,
    dtype: DType,
    f: impl Fn(usize, usize) -> f64,
) -> Result<NodeId, IrError> {
    let v: Vec<f64> = (0..n * n).map(|k| f(k / n, k % n)).collect();
    let t = match dtype {
        DType::F32 => {
            HostTensor::from_vec(v.iter().map(|&x| x as f32).collect::<Vec<f32>>(), &[n, n])
        }
        _ => HostTensor::from_vec(v, &[n, n]),
    }?;
    Ok(g.constant_tensor(&t))
}

/// Zeros of `like`'s shape.
pub(crate) fn zeros_like(g: &mut Graph, like: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(like).clone();
    let z = g.scalar(0.0, s.dtype());
    g.try_node(Op::Broadcast, &[z], Some(s))
}

/// The static size of the last axis of `x`.
pub(crate) fn last_dim(g: &Graph, x: NodeId) -> Result<usize, IrError> {
    let s = g.shape(x);
    s.dims()
        .last()
        .and_then(Dim::as_static)
        .ok_or_else(|| IrError::InvalidOp {
            op: "linalg".into(),
            reason: format!("derivative rules need a static matrix size, {s} is symbolic"),
        })
}

/// Rows `r0..r0 + rows`, columns `c0..c0 + cols` of the last two axes of `x`.
pub(crate) fn block(
    g: &mut Graph,
    x: NodeId,
    (r0, rows): (usize, usize),
    (c0, cols): (usize, usize),
) -> Result<NodeId, IrError> {
    let s = g.shape(x).clone();
    let r = s.rank();
    let mut starts = vec![0; r];
    starts[r - 2] = r0;
    starts[r - 1] = c0;
    let mut dims = s.dims().to_vec();
    dims[r - 2] = Dim::Static(rows);
    dims[r - 1] = Dim::Static(cols);
    g.try_node(
        Op::Slice(rlx_ir::op::SliceSpec {
            starts,
            steps: vec![1; r],
        }),
        &[x],
        Some(Shape::from_dims(dims, s.dtype())),
    )
}

/// `xs` (`[..., r_i, c]`) stacked along the row axis.
pub(crate) fn stack_rows(g: &mut Graph, xs: &[NodeId]) -> Result<NodeId, IrError> {
    let r = g.shape(xs[0]).rank();
    g.try_node(Op::Concat { axis: r - 2 }, xs, None)
}

/// `x` (`[..., r, c]`) padded with zero columns on the right to `width`.
pub(crate) fn pad_cols(g: &mut Graph, x: NodeId, width: usize) -> Result<NodeId, IrError> {
    let s = g.shape(x).clone();
    let r = s.rank();
    let c = last_dim(g, x)?;
    if c == width {
        return Ok(x);
    }
    let mut dims = s.dims().to_vec();
    dims[r - 1] = Dim::Static(width - c);
    let z = g.scalar(0.0, s.dtype());
    let zeros = g.try_node(Op::Broadcast, &[z], Some(Shape::from_dims(dims, s.dtype())))?;
    g.try_node(Op::Concat { axis: r - 1 }, &[x, zeros], None)
}

/// `v` (`[..., k]`) as a row `[..., 1, k]`.
pub(crate) fn as_row(g: &mut Graph, v: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(v).clone();
    let mut d = s.dims().to_vec();
    d.insert(d.len() - 1, Dim::Static(1));
    g.try_node(Op::Reshape, &[v], Some(Shape::from_dims(d, s.dtype())))
}

/// A row `[..., 1, k]` as `[..., k]`.
pub(crate) fn from_row(g: &mut Graph, row: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(row).clone();
    let mut d = s.dims().to_vec();
    d.remove(d.len() - 2);
    g.try_node(Op::Reshape, &[row], Some(Shape::from_dims(d, s.dtype())))
}

/// `x` where `m != 0`, else 0: a product `f ∘ m` whose factor `m` is an
/// exactly zero cotangent stays 0 even where `f` is infinite (JAX skips
/// such terms as symbolic zeros; a packed cotangent cannot say which of its
/// parts are zero, so the rules mask).
pub(crate) fn where_nonzero(g: &mut Graph, m: NodeId, x: NodeId) -> Result<NodeId, IrError> {
    let z = zeros_like(g, x)?;
    let zm = g.scalar(0.0, g.shape(m).dtype());
    let nz = g.try_node(Op::Compare(rlx_ir::op::CmpOp::Ne), &[m, zm], None)?;
    g.try_node(Op::Select, &[nz, x, z], None)
}
