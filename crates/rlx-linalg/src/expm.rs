//! `linalg.expm`: the matrix exponential by scaling and squaring with the
//! degree-13 Padé approximant (Higham 2005, the scheme behind
//! `scipy.linalg.expm` / `jax.scipy.linalg.expm`), and its derivatives by
//! the block-triangular identity (Mathias 1996; what `expm_frechet` computes):
//! `expm([[X, E], [0, X]]) = [[e^X, L(X, E)], [0, e^X]]`, so the jvp is
//! `L(A, Ȧ)` and the vjp `L(A^T, Ḡ)`, each the top-right block of a `2n`
//! exponential — itself an `expm` node, so higher orders compose.

use crate::emit::{mt, zeros_like};
use crate::host::{by_dtype, load, square, store, Real};
use faer::linalg::solvers::Solve;
use rlx_ir::custom::{CustomAttrs, CustomOp, KernelArg, KernelOut};
use rlx_ir::op::SliceSpec;
use rlx_ir::{Dim, Graph, IrError, NodeId, Op, Shape};

const B: [f64; 14] = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
];

/// `e^A` of one `n x n` matrix, in `T` (the degree-13 scheme for f32 too;
/// `θ13` keeps the scaled norm where its truncation error is below f64's
/// unit roundoff, so below f32's).
fn expm_one<T: Real>(a: faer::Mat<T>) -> faer::Mat<T> {
    let n = a.nrows();
    let norm1 = (0..n)
        .map(|c| (0..n).map(|r| a[(r, c)].f64().abs()).sum::<f64>())
        .fold(0.0, f64::max);
    // θ13 = 5.371920351148152: scale so that ||A / 2^s||_1 <= θ13.
    let s = if norm1 > 5.371920351148152 {
        (norm1 / 5.371920351148152).log2().ceil() as i32
    } else {
        0
    };
    let scale = T::of(2f64.powi(-s));
    let a = faer::Mat::from_fn(n, n, |r, c| a[(r, c)] * scale);
    let eye = faer::Mat::<T>::identity(n, n);
    let a2 = &a * &a;
    let a4 = &a2 * &a2;
    let a6 = &a4 * &a2;
    let lin = |c: [f64; 4], m: [&faer::Mat<T>; 4]| {
        let c = c.map(T::of);
        faer::Mat::from_fn(n, n, |r, k| {
            c[0] * m[0][(r, k)] + c[1] * m[1][(r, k)] + c[2] * m[2][(r, k)] + c[3] * m[3][(r, k)]
        })
    };
    let zero = faer::Mat::<T>::zeros(n, n);
    let u_in = lin([B[13], B[11], B[9], 0.0], [&a6, &a4, &a2, &zero]);
    let u_in = &a6 * &u_in + lin([B[7], B[5], B[3], B[1]], [&a6, &a4, &a2, &eye]);
    let u = &a * &u_in;
    let v_in = lin([B[12], B[10], B[8], 0.0], [&a6, &a4, &a2, &zero]);
    let v = &a6 * &v_in + lin([B[6], B[4], B[2], B[0]], [&a6, &a4, &a2, &eye]);
    let p = &v + &u;
    let q = &v - &u;
    let mut r = q.partial_piv_lu().solve(p);
    for _ in 0..s {
        r = &r * &r;
    }
    r
}

/// The CPU kernel.
pub(crate) fn expm(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, expm_t(&ins[0], out))
}

fn expm_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(a)?;
    for i in 0..batch {
        let e = expm_one(load::<T>(a, i, n, n));
        store(out, i * n * n, n, e.as_ref());
    }
    Ok(())
}

fn expm_op() -> CustomOp {
    CustomOp::new(crate::ops::EXPM, CustomAttrs::new())
}

/// The top-right `n x n` block of `expm([[x, e], [0, x]])`.
fn frechet(g: &mut Graph, x: NodeId, e: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(x).clone();
    let r = s.rank();
    let n = crate::emit::last_dim(g, x)?;
    let z = zeros_like(g, x)?;
    let top = g.try_node(Op::Concat { axis: r - 1 }, &[x, e], None)?;
    let bottom = g.try_node(Op::Concat { axis: r - 1 }, &[z, x], None)?;
    let m = g.try_node(Op::Concat { axis: r - 2 }, &[top, bottom], None)?;
    let big = g.custom(expm_op(), &[m])?;
    let mut starts = vec![0; r];
    starts[r - 1] = n;
    let mut dims = s.dims().to_vec();
    dims[r - 1] = Dim::Static(n);
    dims[r - 2] = Dim::Static(n);
    g.try_node(
        Op::Slice(SliceSpec {
            starts,
            steps: vec![1; r],
        }),
        &[big],
        Some(Shape::from_dims(dims, s.dtype())),
    )
}

pub(crate) fn expm_jvp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    frechet(g, x[0], t[0].expect("a tangent"))
}

pub(crate) fn expm_vjp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let xt = mt(g, x[0])?;
    Ok(vec![Some(frechet(g, xt, ct)?)])
}
