//! Graph builder for OFT with the Cayley-Neumann rotation (PEFT's default).

use super::{check_free, check_linear, constant, linear_unchecked, param, LinearNodes};
use crate::error::{PeftError, Result};
use crate::oft::OftConfig;
use rlx_ir::{DType, Graph, GraphExt, NodeId};

/// The nodes [`oft`] added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OftNodes {
    /// The adapted layer's output `[..., out]`.
    pub output: NodeId,
    /// Param `<prefix>.oft_R.weight [r (1 if shared), bs (bs - 1) / 2]`.
    pub oft_r: NodeId,
    /// The rotation blocks `[r (1 if shared), bs, bs]`.
    pub rotation: NodeId,
}

/// OFT: `y = (x R) W^T + b`, `R` block-diagonal, each block PEFT's truncated
/// Cayley-Neumann series `I + 2Q + 2Q^2 + ... + Q^(n-1)` of the
/// skew-symmetric `Q` built from a row of `oft_R.weight`, or, with
/// `use_cayley_neumann = false`, the exact Cayley transform
/// `(I + Q)^{-1} (I - Q)` (equal to PEFT's `(I - Q)(I + Q)^{-1}`: the two
/// factors commute) through `rlx_linalg::solve`, differentiable like any op.
pub fn oft(
    g: &mut Graph,
    prefix: &str,
    x: NodeId,
    base: LinearNodes,
    config: &OftConfig,
) -> Result<OftNodes> {
    config.check()?;
    let d = check_linear(g, x, base)?;
    if d.in_features != config.in_features() {
        return Err(PeftError::Shape {
            what: "OFT base weight".into(),
            expected: vec![d.out_features, config.in_features()],
            given: vec![d.out_features, d.in_features],
        });
    }
    let (bs, rows, n_el) = (config.block_size, config.weight_rows(), config.n_elements());
    check_free(g, prefix, &["oft_R.weight"])?;
    let oft_r = param(g, prefix, "oft_R.weight", &[rows, n_el], d.dtype)?;

    // Q = S - S^T as one matmul with a constant ±1 placement matrix [n_el, bs*bs].
    let mut place = vec![0.0f64; n_el * bs * bs];
    let mut k = 0;
    for r in 0..bs {
        for c in r + 1..bs {
            place[k * bs * bs + r * bs + c] = 1.0;
            place[k * bs * bs + c * bs + r] = -1.0;
            k += 1;
        }
    }
    let place = constant(g, place, &[n_el, bs * bs], d.dtype);
    let flat_q = g.mm(oft_r, place);
    let q = g.reshape_(flat_q, &[rows as i64, bs as i64, bs as i64]);
    let rotation = if config.use_cayley_neumann {
        neumann(g, q, [rows, bs], config.num_cayley_neumann_terms, d.dtype)
    } else {
        exact_cayley(g, q, [rows, bs], d.dtype)?
    };

    // x [N, r, bs] -> [r, N, bs] @ R [r, bs, bs] -> back to [..., in]
    let xd = g.shape(x).static_dims().ok_or_else(|| PeftError::Invalid {
        what: "x".into(),
        reason: format!("the OFT graph needs static dims, given {}", g.shape(x)),
    })?;
    let n: usize = xd[..xd.len() - 1].iter().product();
    let xb = g.reshape_(x, &[n as i64, config.r as i64, bs as i64]);
    let xt = g.transpose_(xb, &[1, 0, 2]);
    let rotated = g.mm(xt, rotation);
    let back = g.transpose_(rotated, &[1, 0, 2]);
    let dims: Vec<i64> = xd.iter().map(|&v| v as i64).collect();
    let x_rot = g.reshape_(back, &dims);
    Ok(OftNodes {
        output: linear_unchecked(g, x_rot, base),
        oft_r,
        rotation,
    })
}

/// PEFT's `_cayley_batch` without the Neumann series: `(I + Q)^{-1} (I - Q)`
/// per block, one batched linear solve.
fn exact_cayley(g: &mut Graph, q: NodeId, [rows, bs]: [usize; 2], dtype: DType) -> Result<NodeId> {
    let mut eye = vec![0.0f64; bs * bs];
    for i in 0..bs {
        eye[i * bs + i] = 1.0;
    }
    let eye = constant(g, eye, &[bs, bs], dtype);
    let eye = g.expand_(eye, &[rows, bs, bs]);
    let plus = g.add(eye, q);
    let minus = g.sub(eye, q);
    rlx_linalg::solve(g, plus, minus).map_err(|e| PeftError::Invalid {
        what: "OFT exact Cayley transform".into(),
        reason: e.to_string(),
    })
}

/// PEFT's `_cayley_batch` with the Neumann series, batched over blocks.
fn neumann(g: &mut Graph, q: NodeId, [rows, bs]: [usize; 2], terms: usize, dtype: DType) -> NodeId {
    let mut eye = vec![0.0f64; bs * bs];
    for i in 0..bs {
        eye[i * bs + i] = 1.0;
    }
    let eye = constant(g, eye, &[bs, bs], dtype);
    let plus = |g: &mut Graph, r: NodeId, p: NodeId, alpha: f64| {
        let t = if alpha == 1.0 {
            p
        } else {
            g.mul(p, g.constant(alpha, dtype))
        };
        g.add(r, t)
    };
    let mut r = g.expand_(eye, &[rows, bs, bs]);
    if terms > 1 {
        r = plus(g, r, q, 2.0);
        if terms > 2 {
            let mut power = g.mm(q, q);
            r = plus(g, r, power, 2.0);
            for _ in 3..terms - 1 {
                power = g.mm(power, q);
                r = plus(g, r, power, 2.0);
            }
            power = g.mm(power, q);
            r = plus(g, r, power, 1.0);
        }
    }
    r
}
