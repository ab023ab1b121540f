//! Resampling family: nearest / linear upsampling of the spatial dims.

use super::{arity, InferResult};
use crate::Shape;

/// Interpolation of [`crate::Op::Upsample`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InterpMode {
    /// Nearest neighbour: source index `floor(dst * in / out)` (PyTorch `nearest`).
    Nearest,
    /// Linear along each spatial dim (bilinear in 2-d), half-pixel centres
    /// unless `align_corners`.
    Linear,
}

pub(crate) fn infer_upsample(inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if x.rank() < 3 || !x.dtype().is_float() {
        return Err(format!("upsample needs a float x [N, C, *sp], given {x}"));
    }
    if declared.rank() != x.rank()
        || declared.dims()[..2] != x.dims()[..2]
        || declared.dtype() != x.dtype()
    {
        return Err(format!(
            "upsample of {x} keeps N, C and the dtype; declared {declared}"
        ));
    }
    if !declared.is_static() || !x.is_static() {
        return Err("upsample needs static spatial dims".into());
    }
    Ok(declared.clone())
}

/// Source indices and weights of one resized axis: output `i` is
/// `w0[i] * x[i0[i]] + (1 - w0[i]) * x[i1[i]]` (nearest: `w0 = 1`).
pub fn axis_taps(
    mode: InterpMode,
    align_corners: bool,
    input: usize,
    output: usize,
) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
    let (mut i0, mut i1, mut w0) = (
        Vec::with_capacity(output),
        Vec::with_capacity(output),
        Vec::with_capacity(output),
    );
    for d in 0..output {
        match mode {
            InterpMode::Nearest => {
                let s = ((d * input) / output).min(input - 1) as i64;
                i0.push(s);
                i1.push(s);
                w0.push(1.0);
            }
            InterpMode::Linear => {
                let src = if align_corners {
                    if output == 1 {
                        0.0
                    } else {
                        d as f64 * (input - 1) as f64 / (output - 1) as f64
                    }
                } else {
                    ((d as f64 + 0.5) * input as f64 / output as f64 - 0.5).max(0.0)
                };
                let a = (src.floor() as usize).min(input - 1);
                let b = (a + 1).min(input - 1);
                i0.push(a as i64);
                i1.push(b as i64);
                w0.push(1.0 - (src - a as f64));
            }
        }
    }
    (i0, i1, w0)
}

/// Upsampling as primitives: per spatial axis, gathers at constant indices
/// blended with constant weights. The form transforms differentiate.
pub fn decompose_upsample(
    g: &mut crate::Graph,
    x: crate::NodeId,
    mode: InterpMode,
    align_corners: bool,
    out: &Shape,
) -> Result<crate::NodeId, crate::IrError> {
    use crate::op::BinaryOp;
    use crate::{HostTensor, Op};
    let xd = super::emit::static_dims(g, x, "upsample")?;
    let od = out
        .static_dims()
        .ok_or_else(|| crate::IrError::invalid("upsample", "symbolic output"))?;
    let dt = g.shape(x).dtype();
    let mut y = x;
    for axis in 2..xd.len() {
        if xd[axis] == od[axis] {
            continue;
        }
        let (i0, i1, w0) = axis_taps(mode, align_corners, xd[axis], od[axis]);
        let n = od[axis];
        let t0 = g.constant_tensor(&HostTensor::from_vec(i0, &[n])?);
        let a = g.try_node(Op::Gather { axis }, &[y, t0], None)?;
        if mode == InterpMode::Nearest {
            y = a;
            continue;
        }
        let t1 = g.constant_tensor(&HostTensor::from_vec(i1, &[n])?);
        let b = g.try_node(Op::Gather { axis }, &[y, t1], None)?;
        let mut wd = vec![1; xd.len()];
        wd[axis] = n;
        let w1: Vec<f64> = w0.iter().map(|w| 1.0 - w).collect();
        let weight = |g: &mut crate::Graph, w: Vec<f64>| -> Result<crate::NodeId, crate::IrError> {
            let c = g.constant_tensor(&HostTensor::from_vec(w, &wd)?);
            if dt == crate::DType::F64 {
                Ok(c)
            } else {
                g.try_node(Op::Cast, &[c], Some(Shape::new(&wd, dt)))
            }
        };
        let c0 = weight(g, w0)?;
        let c1 = weight(g, w1)?;
        let a = super::emit::bin(g, BinaryOp::Mul, a, c0)?;
        let b = super::emit::bin(g, BinaryOp::Mul, b, c1)?;
        y = super::emit::bin(g, BinaryOp::Add, a, b)?;
    }
    Ok(y)
}
