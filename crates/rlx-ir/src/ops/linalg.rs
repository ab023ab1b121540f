//! Linear algebra family: matmul (numpy semantics) and dot_general.

use super::{arity, broadcast_dims, fmt_dims, InferResult};
use crate::op::DotDims;
use crate::{DType, Dim, Shape};

pub(crate) fn infer_matmul(inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 2)?;
    let (a, b) = (inputs[0], inputs[1]);
    if a.dtype() != b.dtype() {
        return Err(format!("operands have different dtypes: {a} vs {b}"));
    }
    if a.dtype() == DType::Bool || a.dtype() == DType::C64 {
        return Err(format!("matmul is not defined for dtype {}", a.dtype()));
    }
    if a.rank() == 0 || b.rank() == 0 {
        return Err(format!(
            "matmul needs rank >= 1 operands, given {a} and {b}"
        ));
    }
    // numpy: a rank-1 lhs gets a leading 1, a rank-1 rhs a trailing 1, removed after.
    let ad: Vec<Dim> = if a.rank() == 1 {
        vec![Dim::Static(1), a.dims()[0].clone()]
    } else {
        a.dims().to_vec()
    };
    let bd: Vec<Dim> = if b.rank() == 1 {
        vec![b.dims()[0].clone(), Dim::Static(1)]
    } else {
        b.dims().to_vec()
    };
    let (m, k1) = (&ad[ad.len() - 2], &ad[ad.len() - 1]);
    let (k2, n) = (&bd[bd.len() - 2], &bd[bd.len() - 1]);
    if k1 != k2 {
        return Err(format!(
            "inner dims differ: lhs {a} has {k1}, rhs {b} has {k2}"
        ));
    }
    let batch = broadcast_dims(&ad[..ad.len() - 2], &bd[..bd.len() - 2])?;
    let mut out = batch;
    if a.rank() > 1 {
        out.push(m.clone());
    }
    if b.rank() > 1 {
        out.push(n.clone());
    }
    Ok(Shape::from_dims(out, a.dtype()))
}

pub(crate) fn infer_dot_general(d: &DotDims, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 2)?;
    let (a, b) = (inputs[0], inputs[1]);
    if a.dtype() != b.dtype() {
        return Err(format!("operands have different dtypes: {a} vs {b}"));
    }
    if d.lhs_batch.len() != d.rhs_batch.len() || d.lhs_contract.len() != d.rhs_contract.len() {
        return Err("batch / contracting dim lists must pair up".into());
    }
    let mut seen_a = vec![false; a.rank()];
    let mut seen_b = vec![false; b.rank()];
    for (&i, &j) in d
        .lhs_batch
        .iter()
        .zip(&d.rhs_batch)
        .chain(d.lhs_contract.iter().zip(&d.rhs_contract))
    {
        if i >= a.rank() || j >= b.rank() || seen_a[i] || seen_b[j] {
            return Err(format!(
                "dimension numbers {d:?} are invalid for {a} and {b}"
            ));
        }
        seen_a[i] = true;
        seen_b[j] = true;
        if a.dims()[i] != b.dims()[j] {
            return Err(format!(
                "paired dims differ: lhs axis {i} ({}) vs rhs axis {j} ({}) of {} and {}",
                a.dims()[i],
                b.dims()[j],
                fmt_dims(a.dims()),
                fmt_dims(b.dims())
            ));
        }
    }
    let mut out: Vec<Dim> = d.lhs_batch.iter().map(|&i| a.dims()[i].clone()).collect();
    out.extend(
        (0..a.rank())
            .filter(|&i| !seen_a[i])
            .map(|i| a.dims()[i].clone()),
    );
    out.extend(
        (0..b.rank())
            .filter(|&j| !seen_b[j])
            .map(|j| b.dims()[j].clone()),
    );
    Ok(Shape::from_dims(out, a.dtype()))
}
