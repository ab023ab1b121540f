//! Graph builders for the additive and rescaling adapters: LoRA / rsLoRA,
//! DoRA, IA3 and AdaLoRA.

use super::{
    check_free, check_linear, detach, linear_unchecked, matmul_t, param, LinearDims, LinearNodes,
};
use crate::adalora::{AdaLoraConfig, RANKNUM_EPS};
use crate::error::Result;
use crate::lora::LoraConfig;
use rlx_ir::{Graph, GraphExt, NodeId};

/// The nodes [`lora`] added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoraNodes {
    /// The adapted layer's output `[..., out]`.
    pub output: NodeId,
    /// Param `<prefix>.lora_A.weight [r, in]`.
    pub lora_a: NodeId,
    /// Param `<prefix>.lora_B.weight [out, r]`.
    pub lora_b: NodeId,
}

/// LoRA / rsLoRA: `x W^T + b + ((x A^T) B^T) · scaling`.
pub fn lora(
    g: &mut Graph,
    prefix: &str,
    x: NodeId,
    base: LinearNodes,
    config: &LoraConfig,
) -> Result<LoraNodes> {
    config.check()?;
    let d = check_linear(g, x, base)?;
    check_free(g, prefix, &["lora_A.weight", "lora_B.weight"])?;
    let (lora_a, lora_b) = low_rank_params(g, prefix, d, config.r, ".weight")?;
    let y = linear_unchecked(g, x, base);
    let delta = lora_branch(g, x, lora_a, lora_b);
    let scaled = g.mul(delta, g.constant(config.scaling(), d.dtype));
    Ok(LoraNodes {
        output: g.add(y, scaled),
        lora_a,
        lora_b,
    })
}

/// Params `<prefix>.lora_A<suffix> [r, in]` and `<prefix>.lora_B<suffix> [out, r]`.
fn low_rank_params(
    g: &mut Graph,
    prefix: &str,
    d: LinearDims,
    r: usize,
    suffix: &str,
) -> Result<(NodeId, NodeId)> {
    let a = param(
        g,
        prefix,
        &format!("lora_A{suffix}"),
        &[r, d.in_features],
        d.dtype,
    )?;
    let b = param(
        g,
        prefix,
        &format!("lora_B{suffix}"),
        &[d.out_features, r],
        d.dtype,
    )?;
    Ok((a, b))
}

/// `(x A^T) B^T`.
fn lora_branch(g: &mut Graph, x: NodeId, a: NodeId, b: NodeId) -> NodeId {
    let xa = matmul_t(g, x, a);
    matmul_t(g, xa, b)
}

/// The nodes [`dora`] added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DoraNodes {
    /// The adapted layer's output `[..., out]`.
    pub output: NodeId,
    /// Param `<prefix>.lora_A.weight [r, in]`.
    pub lora_a: NodeId,
    /// Param `<prefix>.lora_B.weight [out, r]`.
    pub lora_b: NodeId,
    /// Param `<prefix>.lora_magnitude_vector [out]`.
    pub magnitude: NodeId,
    /// The (detached) weight norm `||W + s B A||` per output row, `[out]`.
    pub weight_norm: NodeId,
}

/// DoRA: with `f = m / ||W + s B A||_row` (the norm detached, as PEFT does),
/// `x W^T + b + (f - 1) ⊙ x W^T + f ⊙ ((x A^T) B^T) · s`.
pub fn dora(
    g: &mut Graph,
    prefix: &str,
    x: NodeId,
    base: LinearNodes,
    config: &LoraConfig,
) -> Result<DoraNodes> {
    config.check()?;
    let d = check_linear(g, x, base)?;
    let s = config.scaling();
    let names = ["lora_A.weight", "lora_B.weight", "lora_magnitude_vector"];
    check_free(g, prefix, &names)?;
    let (lora_a, lora_b) = low_rank_params(g, prefix, d, config.r, ".weight")?;
    let magnitude = param(
        g,
        prefix,
        "lora_magnitude_vector",
        &[d.out_features],
        d.dtype,
    )?;

    let ba = g.mm(lora_b, lora_a);
    let sba = g.mul(ba, g.constant(s, d.dtype));
    let adapted = g.add(base.weight, sba);
    let sq = g.mul(adapted, adapted);
    let sum = g.sum(sq, &[1], false);
    let norm = g.sqrt(sum);
    let weight_norm = detach(g, norm)?;
    let factor = g.div(magnitude, weight_norm);

    let y = linear_unchecked(g, x, base);
    let xw = matmul_t(g, x, base.weight);
    let fm1 = g.sub(factor, g.constant(1.0, d.dtype));
    let base_term = g.mul(fm1, xw);
    let delta = lora_branch(g, x, lora_a, lora_b);
    let fd = g.mul(factor, delta);
    let lora_term = g.mul(fd, g.constant(s, d.dtype));
    let y = g.add(y, base_term);
    Ok(DoraNodes {
        output: g.add(y, lora_term),
        lora_a,
        lora_b,
        magnitude,
        weight_norm,
    })
}

/// The nodes [`ia3`] added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ia3Nodes {
    /// The adapted layer's output `[..., out]`.
    pub output: NodeId,
    /// Param `<prefix>.ia3_l`: `[out, 1]`, or `[1, in]` when feed-forward.
    pub ia3_l: NodeId,
}

/// IA3: `(x W^T + b) ⊙ l`, or `(x ⊙ l) W^T + b` for a feed-forward layer.
pub fn ia3(
    g: &mut Graph,
    prefix: &str,
    x: NodeId,
    base: LinearNodes,
    is_feedforward: bool,
) -> Result<Ia3Nodes> {
    let d = check_linear(g, x, base)?;
    let shape = crate::Ia3Adapter::shape_for(is_feedforward, d.in_features, d.out_features);
    check_free(g, prefix, &["ia3_l"])?;
    let ia3_l = param(g, prefix, "ia3_l", &shape, d.dtype)?;
    let n = shape[0] * shape[1];
    let l = g.reshape_(ia3_l, &[n as i64]);
    let output = if is_feedforward {
        let xs = g.mul(x, l);
        linear_unchecked(g, xs, base)
    } else {
        let y = linear_unchecked(g, x, base);
        g.mul(y, l)
    };
    Ok(Ia3Nodes { output, ia3_l })
}

/// The nodes [`adalora`] added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaLoraNodes {
    /// The adapted layer's output `[..., out]`.
    pub output: NodeId,
    /// Param `<prefix>.lora_A [r, in]`.
    pub lora_a: NodeId,
    /// Param `<prefix>.lora_E [r, 1]`.
    pub lora_e: NodeId,
    /// Param `<prefix>.lora_B [out, r]`.
    pub lora_b: NodeId,
}

/// AdaLoRA: `x W^T + b + ((x (A ⊙ E)^T) B^T) · scaling / (ranknum + 1e-5)`.
pub fn adalora(
    g: &mut Graph,
    prefix: &str,
    x: NodeId,
    base: LinearNodes,
    config: &AdaLoraConfig,
) -> Result<AdaLoraNodes> {
    let d = check_linear(g, x, base)?;
    check_free(g, prefix, &["lora_A", "lora_E", "lora_B"])?;
    let (lora_a, lora_b) = low_rank_params(g, prefix, d, config.r, "")?;
    let lora_e = param(g, prefix, "lora_E", &[config.r, 1], d.dtype)?;
    let ae = g.mul(lora_a, lora_e);
    let delta = lora_branch(g, x, ae, lora_b);
    let scaled = g.mul(delta, g.constant(config.scaling(), d.dtype));
    let divided = g.div(scaled, g.constant(config.ranknum + RANKNUM_EPS, d.dtype));
    let y = linear_unchecked(g, x, base);
    Ok(AdaLoraNodes {
        output: g.add(y, divided),
        lora_a,
        lora_e,
        lora_b,
    })
}

/// AdaLoRA's orthogonal regulariser, the term `AdaLoraModel.forward` adds to
/// the loss times `orth_reg_weight`: the mean over every module's `lora_A`
/// and `lora_B` of `||A A^T - I||_F` and `||B^T B - I||_F` (a scalar).
pub fn adalora_orth_reg(g: &mut Graph, adapters: &[AdaLoraNodes]) -> Result<NodeId> {
    let Some(first) = adapters.first() else {
        return Err(crate::error::invalid(
            "adalora_orth_reg",
            "needs at least one AdaLoRA module",
        ));
    };
    let dtype = g.shape(first.lora_a).dtype();
    let mut total: Option<NodeId> = None;
    for n in adapters {
        let at = g.transpose_(n.lora_a, &[1, 0]);
        let bt = g.transpose_(n.lora_b, &[1, 0]);
        for cov in [g.mm(n.lora_a, at), g.mm(bt, n.lora_b)] {
            let r = g.shape(cov).static_dims().map_or(0, |d| d[0]);
            let mut eye = vec![0.0f64; r * r];
            (0..r).for_each(|i| eye[i * r + i] = 1.0);
            let eye = super::constant(g, eye, &[r, r], dtype);
            let diff = g.sub(cov, eye);
            let sq = g.mul(diff, diff);
            let sum = g.sum(sq, &[0, 1], false);
            let fro = g.sqrt(sum);
            total = Some(match total {
                Some(t) => g.add(t, fro),
                None => fro,
            });
        }
    }
    let total = total.expect("at least one module");
    Ok(g.div(total, g.constant(2.0 * adapters.len() as f64, dtype)))
}
