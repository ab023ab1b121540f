//! `linalg.expm`: the matrix exponential by scaling and squaring with the
//! degree-13 Padé approximant (Higham 2005, the scheme behind
//! `scipy.linalg.expm` / `jax.scipy.linalg.expm`), and its derivatives by
//! the block-triangular identity (Mathias 1996; what `expm_frechet` computes):
//! `expm([[X, E], [0, X]]) = [[e^X, L(X, E)], [0, e^X]]`, so the jvp is
//! `L(A, Ȧ)` and the vjp `L(A^T, Ḡ)`, each the top-right block of a `2n`
//! exponential — itself an `expm` node, so higher orders compose.

use crate::emit::{mt, zeros_like};
use crate::host::{read, square, write};
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

/// `e^A` of one `n x n` matrix.
fn expm_one(a: faer::Mat<f64>) -> faer::Mat<f64> {
    let n = a.nrows();
    let norm1 = (0..n)
        .map(|c| (0..n).map(|r| a[(r, c)].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    // θ13 = 5.371920351148152: scale so that ||A / 2^s||_1 <= θ13.
    let s = if norm1 > 5.371920351148152 {
        (norm1 / 5.371920351148152).log2().ceil() as i32
    } else {
        0
    };
    let a = faer::Mat::from_fn(n, n, |r, c| a[(r, c)] / 2f64.powi(s));
    let eye = faer::Mat::<f64>::identity(n, n);
    let a2 = &a * &a;
    let a4 = &a2 * &a2;
    let a6 = &a4 * &a2;
    let lin = |c: [f64; 4], m: [&faer::Mat<f64>; 4]| {
        faer::Mat::from_fn(n, n, |r, k| {
            c[0] * m[0][(r, k)] + c[1] * m[1][(r, k)] + c[2] * m[2][(r, k)] + c[3] * m[3][(r, k)]
        })
    };
    let zero = faer::Mat::<f64>::zeros(n, n);
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
    let (batch, n) = square(&ins[0])?;
    let a = read(&ins[0])?;
    let mut res = Vec::with_capacity(a.len());
    for i in 0..batch {
        let e = expm_one(crate::host::mat(&a, i, n, n));
        crate::host::push(&mut res, e.as_ref());
    }
    write(out, &res)
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
