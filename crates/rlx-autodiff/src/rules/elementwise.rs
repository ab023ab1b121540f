//! Derivative rules of the elementwise family: unary, binary, select, cast.
//! The derivative factors are shared by reverse (`vjp_*`) and forward
//! (`jvp_*`) mode.

use crate::emit::*;
use crate::Result;
use rlx_ir::op::{BinaryOp, CmpOp, UnaryOp};
use rlx_ir::{Graph, NodeId};

/// `f'(x)` of a unary op as a node (`None`: the derivative is zero).
pub fn unary_derivative(
    g: &mut Graph,
    op: UnaryOp,
    x: NodeId,
    y: NodeId,
) -> Result<Option<NodeId>> {
    use UnaryOp::*;
    let d = match op {
        Neg => scalar_like(g, x, -1.0),
        Abs => un(g, Sign, x)?,
        Exp => y,
        Log => {
            let one = scalar_like(g, x, 1.0);
            div(g, one, x)?
        }
        Sqrt => {
            let half = scalar_like(g, y, 0.5);
            div(g, half, y)?
        }
        // d x^-1/2 = -1/2 x^-3/2 = -y / (2x)
        Rsqrt => {
            let t = div(g, y, x)?;
            scale(g, t, -0.5)?
        }
        Reciprocal => {
            let t = mul(g, y, y)?;
            neg(g, t)?
        }
        Tanh => {
            let one = scalar_like(g, y, 1.0);
            let t = mul(g, y, y)?;
            sub(g, one, t)?
        }
        Sigmoid => {
            let one = scalar_like(g, y, 1.0);
            let t = sub(g, one, y)?;
            mul(g, y, t)?
        }
        // relu'(0) = 0 (JAX)
        Relu => {
            let zero = scalar_like(g, x, 0.0);
            let pos = cmp(g, CmpOp::Gt, x, zero)?;
            cast(g, pos, dtype(g, x))?
        }
        // Φ(x) + x φ(x)
        Gelu => {
            let s = scale(g, x, std::f64::consts::FRAC_1_SQRT_2)?;
            let e = un(g, Erf, s)?;
            let one = scalar_like(g, x, 1.0);
            let cdf = add(g, one, e)?;
            let cdf = scale(g, cdf, 0.5)?;
            let x2 = mul(g, x, x)?;
            let x2 = scale(g, x2, -0.5)?;
            let pdf = un(g, Exp, x2)?;
            let pdf = scale(g, pdf, 1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
            let xp = mul(g, x, pdf)?;
            add(g, cdf, xp)?
        }
        // 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2), t = tanh(c (x + a x^3))
        GeluApprox => {
            let (c, a) = ((2.0 / std::f64::consts::PI).sqrt(), 0.044715);
            let x2 = mul(g, x, x)?;
            let x3 = mul(g, x2, x)?;
            let ax3 = scale(g, x3, a)?;
            let inner = add(g, x, ax3)?;
            let u = scale(g, inner, c)?;
            let t = un(g, Tanh, u)?;
            let one = scalar_like(g, x, 1.0);
            let l = add(g, one, t)?;
            let l = scale(g, l, 0.5)?;
            let t2 = mul(g, t, t)?;
            let sech2 = sub(g, one, t2)?;
            let k = scale(g, x2, 3.0 * a)?;
            let k = add(g, one, k)?;
            let r = mul(g, x, sech2)?;
            let r = mul(g, r, k)?;
            let r = scale(g, r, 0.5 * c)?;
            add(g, l, r)?
        }
        // s (1 + x (1 - s))
        Silu => {
            let s = un(g, Sigmoid, x)?;
            let one = scalar_like(g, x, 1.0);
            let oms = sub(g, one, s)?;
            let t = mul(g, x, oms)?;
            let t = add(g, one, t)?;
            mul(g, s, t)?
        }
        Sin => un(g, Cos, x)?,
        Cos => {
            let s = un(g, Sin, x)?;
            neg(g, s)?
        }
        Erf => {
            let x2 = mul(g, x, x)?;
            let nx2 = neg(g, x2)?;
            let e = un(g, Exp, nx2)?;
            scale(g, e, 2.0 / std::f64::consts::PI.sqrt())?
        }
        Softplus => un(g, Sigmoid, x)?,
        Floor | Ceil | Round | Sign | Not => return Ok(None),
    };
    Ok(Some(d))
}

/// `(∂y/∂a, ∂y/∂b)` of a binary op, in the broadcast output shape (`None`: zero).
pub fn binary_partials(
    g: &mut Graph,
    op: BinaryOp,
    a: NodeId,
    b: NodeId,
    y: NodeId,
) -> Result<(Option<NodeId>, Option<NodeId>)> {
    use BinaryOp::*;
    let one = scalar_like(g, a, 1.0);
    Ok(match op {
        Add => (Some(one), Some(one)),
        Sub => (Some(one), Some(scalar_like(g, a, -1.0))),
        Mul => (Some(b), Some(a)),
        Div => {
            let inv = div(g, one, b)?;
            let t = div(g, y, b)?;
            (Some(inv), Some(neg(g, t)?))
        }
        Pow => {
            // ∂a = b a^(b-1) (0 where b == 0); ∂b = y log(a) (0 where a == 0), as JAX.
            let zero = scalar_like(g, a, 0.0);
            let bm1 = sub(g, b, one)?;
            let p = bin(g, Pow, a, bm1)?;
            let da = mul(g, b, p)?;
            let bz = cmp(g, CmpOp::Eq, b, zero)?;
            let da = select(g, bz, zero, da)?;
            let az = cmp(g, CmpOp::Eq, a, zero)?;
            let safe = select(g, az, one, a)?;
            let la = un(g, UnaryOp::Log, safe)?;
            let db = mul(g, y, la)?;
            (Some(da), Some(db))
        }
        // Ties split the gradient evenly, as JAX's max / min.
        Max | Min => {
            let (wins, loses) = if op == Max {
                (CmpOp::Gt, CmpOp::Lt)
            } else {
                (CmpOp::Lt, CmpOp::Gt)
            };
            let half = scalar_like(g, a, 0.5);
            let zero = scalar_like(g, a, 0.0);
            let aw = cmp(g, wins, a, b)?;
            let al = cmp(g, loses, a, b)?;
            let tie_or_lose = select(g, al, zero, half)?;
            let da = select(g, aw, one, tie_or_lose)?;
            let tie_or_win = select(g, aw, zero, half)?;
            let db = select(g, al, one, tie_or_win)?;
            (Some(da), Some(db))
        }
        // a mod b = a - b floor(a / b)
        Mod => {
            let q = div(g, a, b)?;
            let f = un(g, UnaryOp::Floor, q)?;
            (Some(one), Some(neg(g, f)?))
        }
        Atan2 => {
            let a2 = mul(g, a, a)?;
            let b2 = mul(g, b, b)?;
            let den = add(g, a2, b2)?;
            let da = div(g, b, den)?;
            let na = neg(g, a)?;
            let db = div(g, na, den)?;
            (Some(da), Some(db))
        }
        And | Or | Xor => (None, None),
    })
}

fn times(g: &mut Graph, ct: NodeId, f: Option<NodeId>) -> Result<Option<NodeId>> {
    f.map(|f| mul(g, ct, f)).transpose()
}

/// Reverse mode of a unary op.
pub fn vjp_unary(
    g: &mut Graph,
    op: UnaryOp,
    x: NodeId,
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let d = unary_derivative(g, op, x, y)?;
    Ok(vec![times(g, ct, d)?])
}

/// Reverse mode of a binary op (broadcasting undone).
pub fn vjp_binary(
    g: &mut Graph,
    op: BinaryOp,
    a: NodeId,
    b: NodeId,
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let (pa, pb) = binary_partials(g, op, a, b, y)?;
    let mut out = Vec::with_capacity(2);
    for (x, p) in [(a, pa), (b, pb)] {
        let c = match times(g, ct, p)? {
            Some(c) => {
                let c = broadcast(g, c, &dims(g, y)?)?;
                Some(sum_to(g, c, &dims(g, x)?)?)
            }
            None => None,
        };
        out.push(c);
    }
    Ok(out)
}

/// Reverse mode of `where(c, a, b)`.
pub fn vjp_select(g: &mut Graph, inputs: &[NodeId], ct: NodeId) -> Result<Vec<Option<NodeId>>> {
    let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
    let zero = scalar_like(g, ct, 0.0);
    let ca = select(g, c, ct, zero)?;
    let cb = select(g, c, zero, ct)?;
    let ca = sum_to(g, ca, &dims(g, a)?)?;
    let cb = sum_to(g, cb, &dims(g, b)?)?;
    Ok(vec![None, Some(ca), Some(cb)])
}

/// Reverse mode of a cast: only float -> float carries a gradient.
pub fn vjp_cast(g: &mut Graph, x: NodeId, ct: NodeId) -> Result<Vec<Option<NodeId>>> {
    let (from, to) = (dtype(g, x), dtype(g, ct));
    if differentiable(from) && differentiable(to) {
        Ok(vec![Some(cast(g, ct, from)?)])
    } else {
        Ok(vec![None])
    }
}

/// Forward mode of a unary op.
pub fn jvp_unary(
    g: &mut Graph,
    op: UnaryOp,
    x: NodeId,
    y: NodeId,
    t: NodeId,
) -> Result<Option<NodeId>> {
    let d = unary_derivative(g, op, x, y)?;
    times(g, t, d)
}

/// Forward mode of a binary op.
pub fn jvp_binary(
    g: &mut Graph,
    op: BinaryOp,
    a: NodeId,
    b: NodeId,
    y: NodeId,
    ta: Option<NodeId>,
    tb: Option<NodeId>,
) -> Result<Option<NodeId>> {
    let (pa, pb) = binary_partials(g, op, a, b, y)?;
    let xa = match (ta, pa) {
        (Some(t), Some(p)) => Some(mul(g, t, p)?),
        _ => None,
    };
    let xb = match (tb, pb) {
        (Some(t), Some(p)) => Some(mul(g, t, p)?),
        _ => None,
    };
    let s = add_opt(g, xa, xb)?;
    s.map(|s| broadcast(g, s, &dims(g, y)?)).transpose()
}
