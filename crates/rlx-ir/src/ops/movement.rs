//! Movement family: reshape, transpose, slice, concat, pad, broadcast.

use super::{arity, check_axis, fmt_dims, static_dim, InferResult};
use crate::op::{PadMode, SliceSpec};
use crate::{Dim, Shape};

pub(crate) fn infer_reshape(inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if x.dtype() != declared.dtype() {
        return Err(format!("reshape keeps the dtype: {x} vs {declared}"));
    }
    if !same_element_count(x.dims(), declared.dims()) {
        return Err(format!(
            "cannot reshape {x} to {declared}: element counts differ"
        ));
    }
    Ok(declared.clone())
}

/// Element counts equal: static products equal and the same symbols on both sides.
fn same_element_count(a: &[Dim], b: &[Dim]) -> bool {
    let split = |d: &[Dim]| {
        let mut syms: Vec<String> = Vec::new();
        let mut prod = 1usize;
        for x in d {
            match x {
                Dim::Static(n) => prod = prod.saturating_mul(*n),
                Dim::Sym(s) => syms.push(s.clone()),
            }
        }
        syms.sort();
        (prod, syms)
    };
    let (pa, sa) = split(a);
    let (pb, sb) = split(b);
    (pa == 0 && pb == 0) || (pa == pb && sa == sb)
}

pub(crate) fn infer_transpose(perm: &[usize], inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    let mut seen = vec![false; x.rank()];
    if perm.len() != x.rank() {
        return Err(format!(
            "perm {perm:?} has {} axes, input {x} has {}",
            perm.len(),
            x.rank()
        ));
    }
    for &p in perm {
        if p >= x.rank() || seen[p] {
            return Err(format!(
                "perm {perm:?} is not a permutation of 0..{}",
                x.rank()
            ));
        }
        seen[p] = true;
    }
    Ok(x.with_dims(perm.iter().map(|&p| x.dims()[p].clone()).collect()))
}

pub(crate) fn infer_slice(spec: &SliceSpec, inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    let r = x.rank();
    if spec.starts.len() != r || spec.steps.len() != r || declared.rank() != r {
        return Err(format!(
            "slice spec {spec:?} does not match rank {r} of {x}"
        ));
    }
    if declared.dtype() != x.dtype() {
        return Err(format!("slice keeps the dtype: {x} vs {declared}"));
    }
    for i in 0..r {
        let step = spec.steps[i];
        if step == 0 {
            return Err(format!("slice step of axis {i} is 0"));
        }
        if step == 1 && spec.starts[i] == 0 && declared.dims()[i] == x.dims()[i] {
            continue; // a full (possibly symbolic) axis
        }
        let n = static_dim(&x.dims()[i], "a sliced dim")? as i64;
        let len = static_dim(&declared.dims()[i], "a slice length")? as i64;
        if len == 0 {
            continue;
        }
        let first = spec.starts[i] as i64;
        let last = first + (len - 1) * step;
        if first >= n || last < 0 || last >= n {
            return Err(format!(
                "axis {i}: start {first}, step {step}, length {len} reads outside 0..{n} of {x}"
            ));
        }
    }
    Ok(declared.clone())
}

pub(crate) fn infer_concat(axis: usize, inputs: &[&Shape]) -> InferResult {
    if inputs.is_empty() {
        return Err("concat needs at least one input".into());
    }
    let first = inputs[0];
    check_axis(axis, first.rank())?;
    let mut total = 0usize;
    for s in inputs {
        if s.rank() != first.rank() || s.dtype() != first.dtype() {
            return Err(format!("inputs differ in rank or dtype: {first} vs {s}"));
        }
        for i in 0..s.rank() {
            if i != axis && s.dims()[i] != first.dims()[i] {
                return Err(format!(
                    "inputs differ off the concat axis {axis}: {first} vs {s}"
                ));
            }
        }
        total += static_dim(&s.dims()[axis], "the concat axis")?;
    }
    let mut dims = first.dims().to_vec();
    dims[axis] = Dim::Static(total);
    Ok(first.with_dims(dims))
}

pub(crate) fn infer_pad(pads: &[(usize, usize)], mode: &PadMode, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if pads.len() != x.rank() {
        return Err(format!(
            "{} pad pairs for rank {} of {x}",
            pads.len(),
            x.rank()
        ));
    }
    let mut dims = Vec::with_capacity(x.rank());
    for (i, (&(lo, hi), d)) in pads.iter().zip(x.dims()).enumerate() {
        if lo == 0 && hi == 0 {
            dims.push(d.clone());
            continue;
        }
        let n = static_dim(d, "a padded dim")?;
        match mode {
            PadMode::Reflect if lo >= n || hi >= n => {
                return Err(format!(
                    "reflect pad ({lo}, {hi}) of axis {i} needs pads < {n}"
                ))
            }
            PadMode::Edge if n == 0 => return Err(format!("edge pad of the empty axis {i}")),
            _ => {}
        }
        dims.push(Dim::Static(n + lo + hi));
    }
    Ok(x.with_dims(dims))
}

pub(crate) fn infer_broadcast(inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if x.dtype() != declared.dtype() || x.rank() > declared.rank() {
        return Err(format!("cannot broadcast {x} to {declared}"));
    }
    let off = declared.rank() - x.rank();
    for (i, d) in x.dims().iter().enumerate() {
        let t = &declared.dims()[off + i];
        if d != t && *d != Dim::Static(1) {
            return Err(format!(
                "cannot broadcast {} to {}: axis {i} is {d}, target {t}",
                fmt_dims(x.dims()),
                fmt_dims(declared.dims())
            ));
        }
    }
    Ok(declared.clone())
}
