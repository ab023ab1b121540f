//! Fallible node builders the rules share. Every helper infers shapes
//! through `Graph::try_node`, so a rule that builds something invalid gets
//! an error, never a panic.

use crate::Result;
use rlx_ir::op::{BinaryOp, CmpOp, ReduceOp, SliceSpec, UnaryOp};
use rlx_ir::{DType, Dim, Graph, NodeId, Op, Shape};

/// Static dims of `x`.
pub fn dims(g: &Graph, x: NodeId) -> Result<Vec<usize>> {
    g.shape(x).static_dims().ok_or_else(|| {
        crate::AutodiffError::InvalidGraph(format!(
            "{} has symbolic dims {}; bind them before transforming",
            rlx_ir::node_label(g, x),
            g.shape(x)
        ))
    })
}

/// Dtype of `x`.
pub fn dtype(g: &Graph, x: NodeId) -> DType {
    g.shape(x).dtype()
}

/// True for dtypes that carry derivatives: real floats and C64 (whose
/// cotangents follow JAX's convention, see `rules::fft`).
pub fn differentiable(dt: DType) -> bool {
    dt.is_float() || dt == DType::C64
}

/// Elementwise binary op (operands of one dtype, broadcast).
pub fn bin(g: &mut Graph, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId> {
    Ok(g.try_node(Op::Binary(op), &[a, b], None)?)
}

/// `a + b`.
pub fn add(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId> {
    bin(g, BinaryOp::Add, a, b)
}

/// `a - b`.
pub fn sub(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId> {
    bin(g, BinaryOp::Sub, a, b)
}

/// `a * b`.
pub fn mul(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId> {
    bin(g, BinaryOp::Mul, a, b)
}

/// `a / b`.
pub fn div(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId> {
    bin(g, BinaryOp::Div, a, b)
}

/// Elementwise unary op.
pub fn un(g: &mut Graph, op: UnaryOp, x: NodeId) -> Result<NodeId> {
    Ok(g.try_node(Op::Unary(op), &[x], None)?)
}

/// `-x`.
pub fn neg(g: &mut Graph, x: NodeId) -> Result<NodeId> {
    un(g, UnaryOp::Neg, x)
}

/// A rank-0 constant of `x`'s dtype.
pub fn scalar_like(g: &mut Graph, x: NodeId, v: f64) -> NodeId {
    let dt = dtype(g, x);
    g.scalar(v, dt)
}

/// `x * v` for a scalar `v`.
pub fn scale(g: &mut Graph, x: NodeId, v: f64) -> Result<NodeId> {
    let c = scalar_like(g, x, v);
    mul(g, x, c)
}

/// Zeros of `dims` and `dtype`.
pub fn zeros(g: &mut Graph, dims: &[usize], dtype: DType) -> Result<NodeId> {
    let z = g.scalar(0.0, dtype);
    broadcast(g, z, dims)
}

/// Zeros shaped like `x`.
pub fn zeros_like(g: &mut Graph, x: NodeId) -> Result<NodeId> {
    let d = dims(g, x)?;
    let dt = dtype(g, x);
    zeros(g, &d, dt)
}

/// Comparison (Bool result).
pub fn cmp(g: &mut Graph, op: CmpOp, a: NodeId, b: NodeId) -> Result<NodeId> {
    Ok(g.try_node(Op::Compare(op), &[a, b], None)?)
}

/// `where(c, a, b)`.
pub fn select(g: &mut Graph, c: NodeId, a: NodeId, b: NodeId) -> Result<NodeId> {
    Ok(g.try_node(Op::Select, &[c, a, b], None)?)
}

/// Conversion to `to` (no node when already of that dtype).
pub fn cast(g: &mut Graph, x: NodeId, to: DType) -> Result<NodeId> {
    if dtype(g, x) == to {
        return Ok(x);
    }
    let s = g.shape(x).with_dtype(to);
    Ok(g.try_node(Op::Cast, &[x], Some(s))?)
}

/// Reshape to `d` (no node when already so).
pub fn reshape(g: &mut Graph, x: NodeId, d: &[usize]) -> Result<NodeId> {
    if dims(g, x)? == d {
        return Ok(x);
    }
    let dt = dtype(g, x);
    Ok(g.try_node(Op::Reshape, &[x], Some(Shape::new(d, dt)))?)
}

/// numpy `broadcast_to` (no node when already so).
pub fn broadcast(g: &mut Graph, x: NodeId, d: &[usize]) -> Result<NodeId> {
    if dims(g, x)? == d {
        return Ok(x);
    }
    let dt = dtype(g, x);
    Ok(g.try_node(Op::Broadcast, &[x], Some(Shape::new(d, dt)))?)
}

/// Axis permutation (no node for the identity).
pub fn transpose(g: &mut Graph, x: NodeId, perm: &[usize]) -> Result<NodeId> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x);
    }
    Ok(g.try_node(
        Op::Transpose {
            perm: perm.to_vec(),
        },
        &[x],
        None,
    )?)
}

/// Inverse of a permutation.
pub fn inverse_perm(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

/// Sum over `axes` (no node when `axes` is empty).
pub fn sum(g: &mut Graph, x: NodeId, axes: &[usize], keep_dim: bool) -> Result<NodeId> {
    if axes.is_empty() {
        return Ok(x);
    }
    let mut axes = axes.to_vec();
    axes.sort_unstable();
    axes.dedup();
    Ok(g.try_node(
        Op::Reduce {
            op: ReduceOp::Sum,
            axes,
            keep_dim,
        },
        &[x],
        None,
    )?)
}

/// Sums a cotangent of broadcast dims `x` down to `target` dims (undoes numpy broadcasting).
pub fn sum_to(g: &mut Graph, x: NodeId, target: &[usize]) -> Result<NodeId> {
    let d = dims(g, x)?;
    if d == target {
        return Ok(x);
    }
    let lead = d.len() - target.len();
    let mut axes: Vec<usize> = (0..lead).collect();
    for (i, &t) in target.iter().enumerate() {
        if t == 1 && d[lead + i] != 1 {
            axes.push(lead + i);
        }
    }
    let s = sum(g, x, &axes, true)?;
    reshape(g, s, target)
}

/// `x[.., start : start + len, ..]` along `axis` with `step` (negative steps walk back from `start`).
pub fn slice_axis(
    g: &mut Graph,
    x: NodeId,
    axis: usize,
    start: usize,
    len: usize,
    step: i64,
) -> Result<NodeId> {
    let d = dims(g, x)?;
    let mut starts = vec![0; d.len()];
    let mut steps = vec![1; d.len()];
    starts[axis] = if len == 0 { 0 } else { start };
    steps[axis] = step;
    let mut out: Vec<Dim> = d.iter().map(|&v| Dim::Static(v)).collect();
    out[axis] = Dim::Static(len);
    let dt = dtype(g, x);
    Ok(g.try_node(
        Op::Slice(SliceSpec { starts, steps }),
        &[x],
        Some(Shape::from_dims(out, dt)),
    )?)
}

/// Zero padding of one axis.
pub fn pad_axis(g: &mut Graph, x: NodeId, axis: usize, lo: usize, hi: usize) -> Result<NodeId> {
    if lo == 0 && hi == 0 {
        return Ok(x);
    }
    let r = g.shape(x).rank();
    let mut pads = vec![(0, 0); r];
    pads[axis] = (lo, hi);
    Ok(g.try_node(
        Op::Pad {
            pads,
            mode: rlx_ir::op::PadMode::Constant(0.0),
        },
        &[x],
        None,
    )?)
}

/// numpy matmul.
pub fn matmul(g: &mut Graph, a: NodeId, b: NodeId) -> Result<NodeId> {
    Ok(g.try_node(Op::MatMul, &[a, b], None)?)
}

/// Swaps the last two axes.
pub fn mt(g: &mut Graph, x: NodeId) -> Result<NodeId> {
    let r = g.shape(x).rank();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    transpose(g, x, &perm)
}

/// `a + b`, treating `None` as a symbolic zero.
pub fn add_opt(g: &mut Graph, a: Option<NodeId>, b: Option<NodeId>) -> Result<Option<NodeId>> {
    Ok(match (a, b) {
        (Some(x), Some(y)) => Some(add(g, x, y)?),
        (x, None) => x,
        (None, y) => y,
    })
}

/// `x` with a leading batch axis of size `b`: a batched value gets size-1
/// axes after the batch so its per-example rank is `rank`; an unbatched one
/// is broadcast to `[b, dims...]`.
pub fn lift(g: &mut Graph, x: NodeId, batched: bool, b: usize, rank: usize) -> Result<NodeId> {
    let d = dims(g, x)?;
    if batched {
        let per = &d[1..];
        if per.len() >= rank {
            return Ok(x);
        }
        let mut nd = vec![b];
        nd.extend(std::iter::repeat_n(1, rank - per.len()));
        nd.extend_from_slice(per);
        return reshape(g, x, &nd);
    }
    let mut nd = vec![b];
    nd.extend_from_slice(&d);
    broadcast(g, x, &nd)
}

/// `[b] + dims` of a shape.
pub fn with_batch(b: usize, s: &Shape) -> Result<Shape> {
    let d = s
        .static_dims()
        .ok_or_else(|| crate::AutodiffError::InvalidGraph(format!("symbolic shape {s}")))?;
    let mut nd = vec![b];
    nd.extend(d);
    Ok(Shape::new(&nd, s.dtype()))
}
