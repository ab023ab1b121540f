//! Products: `matmul`, `dot`, `vdot`, `inner`, `outer`, `tensordot`,
//! `einsum` (one or two operands), `kron`.

use crate::error::{Result, TensorError};
use crate::tensor::{promote_types, Tensor};
use rlx_ir::Op;

fn dims_of(x: &Tensor, op: &str) -> Result<Vec<usize>> {
    x.check()?;
    x.dims()
        .ok_or_else(|| TensorError::invalid(op, format!("needs static dims, given {}", x.shape())))
}

fn as_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&v| v as i64).collect()
}

impl Tensor {
    /// numpy `matmul` (`@`): batched, batch dims broadcast, rank-1 operands
    /// promoted and their axis removed.
    pub fn try_matmul(&self, other: &Tensor) -> Result<Tensor> {
        self.check()?;
        other.check()?;
        if self.ndim() == 0 || other.ndim() == 0 {
            return Err(TensorError::invalid(
                "matmul",
                format!(
                    "operands must have rank >= 1, given {} and {}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let dt = promote_types(self.dtype(), other.dtype());
        let (a, b) = (self.try_astype(dt)?, other.try_astype(dt)?);
        let ka = a.shape().dims().last().cloned();
        let kb = if b.ndim() == 1 {
            b.shape().dims()[0].clone()
        } else {
            b.shape().dims()[b.ndim() - 2].clone()
        };
        if ka != Some(kb) {
            return Err(TensorError::invalid(
                "matmul",
                format!(
                    "contracting dims differ: {} @ {}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        Tensor::op("matmul", Op::MatMul, &[&a, &b], None)
    }

    /// [`Tensor::try_matmul`], failing softly.
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        Tensor::sticky(self.try_matmul(other))
    }

    /// numpy `dot`: products of vectors and matrices; for N-d operands the
    /// sum over the last axis of `self` and the second-to-last of `other`.
    pub fn dot(&self, other: &Tensor) -> Tensor {
        Tensor::sticky_with(|| {
            let (ra, rb) = (self.ndim(), other.ndim());
            if ra == 0 || rb == 0 {
                return (self * other).check().cloned();
            }
            if ra <= 2 && rb <= 2 {
                return self.try_matmul(other);
            }
            let bx = if rb == 1 { 0 } else { rb - 2 };
            tensordot_axes(self, other, &[ra - 1], &[bx])
        })
    }

    /// numpy `vdot`: the dot product of the flattened operands.
    pub fn vdot(&self, other: &Tensor) -> Tensor {
        (self.ravel() * other.ravel()).sum(None, false)
    }

    /// numpy `inner`: the sum over the last axes.
    pub fn inner(&self, other: &Tensor) -> Tensor {
        Tensor::sticky_with(|| {
            if self.ndim() == 0 || other.ndim() == 0 {
                return (self * other).check().cloned();
            }
            tensordot_axes(self, other, &[self.ndim() - 1], &[other.ndim() - 1])
        })
    }

    /// numpy `outer` of the flattened operands.
    pub fn outer(&self, other: &Tensor) -> Tensor {
        self.ravel().expand_dims(1) * other.ravel().expand_dims(0)
    }

    /// numpy `tensordot(a, b, axes=(a_axes, b_axes))`.
    pub fn tensordot(&self, other: &Tensor, a_axes: &[i64], b_axes: &[i64]) -> Tensor {
        Tensor::sticky_with(|| {
            let na = a_axes
                .iter()
                .map(|&a| crate::reduce::norm_axis("tensordot", a, self.ndim()))
                .collect::<Result<Vec<_>>>()?;
            let nb = b_axes
                .iter()
                .map(|&a| crate::reduce::norm_axis("tensordot", a, other.ndim()))
                .collect::<Result<Vec<_>>>()?;
            tensordot_axes(self, other, &na, &nb)
        })
    }

    /// numpy `kron` of two tensors of equal rank.
    pub fn kron(&self, other: &Tensor) -> Tensor {
        Tensor::sticky_with(|| {
            let (da, db) = (dims_of(self, "kron")?, dims_of(other, "kron")?);
            let r = da.len().max(db.len());
            let pad = |d: &[usize]| {
                let mut v = vec![1; r - d.len()];
                v.extend(d);
                v
            };
            let (da, db) = (pad(&da), pad(&db));
            let a_sh: Vec<i64> = da.iter().flat_map(|&v| [v as i64, 1]).collect();
            let b_sh: Vec<i64> = db.iter().flat_map(|&v| [1, v as i64]).collect();
            let out: Vec<i64> = da.iter().zip(&db).map(|(&x, &y)| (x * y) as i64).collect();
            (self.reshape(&a_sh) * other.reshape(&b_sh)).try_reshape(&out)
        })
    }
}

/// `tensordot` over resolved axes: move the contracted axes last / first,
/// flatten to a matrix product, reshape back.
fn tensordot_axes(a: &Tensor, b: &Tensor, ax_a: &[usize], ax_b: &[usize]) -> Result<Tensor> {
    let (da, db) = (dims_of(a, "tensordot")?, dims_of(b, "tensordot")?);
    if ax_a.len() != ax_b.len() {
        return Err(TensorError::invalid(
            "tensordot",
            "axes lists differ in length",
        ));
    }
    for (&x, &y) in ax_a.iter().zip(ax_b) {
        if da[x] != db[y] {
            return Err(TensorError::invalid(
                "tensordot",
                format!(
                    "axis {x} of {} (size {}) does not match axis {y} of {} (size {})",
                    a.shape(),
                    da[x],
                    b.shape(),
                    db[y]
                ),
            ));
        }
    }
    let free_a: Vec<usize> = (0..da.len()).filter(|i| !ax_a.contains(i)).collect();
    let free_b: Vec<usize> = (0..db.len()).filter(|i| !ax_b.contains(i)).collect();
    let pa: Vec<i64> = free_a.iter().chain(ax_a).map(|&v| v as i64).collect();
    let pb: Vec<i64> = ax_b.iter().chain(&free_b).map(|&v| v as i64).collect();
    let m: usize = free_a.iter().map(|&i| da[i]).product();
    let k: usize = ax_a.iter().map(|&i| da[i]).product();
    let n: usize = free_b.iter().map(|&i| db[i]).product();
    let a2 = a.try_transpose(&pa)?.try_reshape(&[m as i64, k as i64])?;
    let b2 = b.try_transpose(&pb)?.try_reshape(&[k as i64, n as i64])?;
    let out: Vec<usize> = free_a
        .iter()
        .map(|&i| da[i])
        .chain(free_b.iter().map(|&i| db[i]))
        .collect();
    a2.try_matmul(&b2)?.try_reshape(&as_i64(&out))
}

/// numpy / JAX `einsum` for one or two operands (`"ij,jk->ik"`,
/// `"bij,bjk->bik"`, `"ii->"` is not supported: a label may appear once per
/// operand). Without `->` the output is the labels seen once, sorted.
pub fn einsum(spec: &str, operands: &[&Tensor]) -> Tensor {
    Tensor::sticky(try_einsum(spec, operands))
}

/// [`einsum`], returning the error.
pub fn try_einsum(spec: &str, operands: &[&Tensor]) -> Result<Tensor> {
    for t in operands {
        t.check()?;
    }
    let bad = |r: String| TensorError::invalid("einsum", format!("\"{spec}\": {r}"));
    let spec_ns: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match spec_ns.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (spec_ns.clone(), None),
    };
    let ins: Vec<Vec<char>> = lhs.split(',').map(|s| s.chars().collect()).collect();
    if ins.len() != operands.len() || !(1..=2).contains(&ins.len()) {
        return Err(bad(format!(
            "{} operand specs for {} operands (1 or 2 supported)",
            ins.len(),
            operands.len()
        )));
    }
    for (spec_i, t) in ins.iter().zip(operands) {
        if spec_i.iter().any(|c| !c.is_ascii_alphabetic()) {
            return Err(bad("labels must be letters (no ellipsis)".into()));
        }
        if spec_i.len() != t.ndim() {
            return Err(bad(format!(
                "{} labels for operand of rank {} ({})",
                spec_i.len(),
                t.ndim(),
                t.shape()
            )));
        }
        let mut s = spec_i.clone();
        s.sort_unstable();
        s.dedup();
        if s.len() != spec_i.len() {
            return Err(bad(
                "a repeated label within one operand (diagonals) is not supported".into(),
            ));
        }
    }
    let count = |c: char| {
        ins.iter()
            .map(|s| s.iter().filter(|&&x| x == c).count())
            .sum::<usize>()
    };
    let out: Vec<char> = match rhs {
        Some(r) => r.chars().collect(),
        None => {
            let mut v: Vec<char> = ins
                .concat()
                .into_iter()
                .filter(|&c| count(c) == 1)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    for c in &out {
        if count(*c) == 0 {
            return Err(bad(format!("output label '{c}' is in no operand")));
        }
    }
    // Size of each label, checked across operands.
    let mut size = std::collections::BTreeMap::new();
    for (s, t) in ins.iter().zip(operands) {
        let d = dims_of(t, "einsum")?;
        for (c, n) in s.iter().zip(d) {
            if let Some(&m) = size.get(c) {
                if m != n {
                    return Err(bad(format!("label '{c}' has sizes {m} and {n}")));
                }
            }
            size.insert(*c, n);
        }
    }
    // Sum out labels that are in one operand only and not in the output.
    let mut ops: Vec<(Tensor, Vec<char>)> = Vec::new();
    for (s, t) in ins.iter().zip(operands) {
        let other: Vec<char> = ins
            .iter()
            .filter(|o| !std::ptr::eq(*o, s))
            .flatten()
            .copied()
            .collect();
        let drop: Vec<i64> = s
            .iter()
            .enumerate()
            .filter(|(_, c)| !out.contains(c) && !other.contains(c))
            .map(|(i, _)| i as i64)
            .collect();
        let t = if drop.is_empty() {
            (*t).clone()
        } else {
            t.try_reduce(rlx_ir::op::ReduceOp::Sum, drop.clone(), false)?
        };
        let s: Vec<char> = s
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(&(*i as i64)))
            .map(|(_, c)| *c)
            .collect();
        ops.push((t, s));
    }
    let (res, labels) = if ops.len() == 1 {
        ops.pop().expect("one operand")
    } else {
        let (b, sb) = ops.pop().expect("two operands");
        let (a, sa) = ops.pop().expect("two operands");
        let batch: Vec<char> = sa
            .iter()
            .filter(|c| sb.contains(c) && out.contains(c))
            .copied()
            .collect();
        let contract: Vec<char> = sa
            .iter()
            .filter(|c| sb.contains(c) && !out.contains(c))
            .copied()
            .collect();
        let fa: Vec<char> = sa.iter().filter(|c| !sb.contains(c)).copied().collect();
        let fb: Vec<char> = sb.iter().filter(|c| !sa.contains(c)).copied().collect();
        let pos =
            |s: &[char], c: &char| s.iter().position(|x| x == c).expect("label present") as i64;
        let pa: Vec<i64> = batch
            .iter()
            .chain(&fa)
            .chain(&contract)
            .map(|c| pos(&sa, c))
            .collect();
        let pb: Vec<i64> = batch
            .iter()
            .chain(&contract)
            .chain(&fb)
            .map(|c| pos(&sb, c))
            .collect();
        let prod = |cs: &[char]| cs.iter().map(|c| size[c]).product::<usize>() as i64;
        let (nb, nm, nk, nn) = (prod(&batch), prod(&fa), prod(&contract), prod(&fb));
        let a3 = a.try_transpose(&pa)?.try_reshape(&[nb, nm, nk])?;
        let b3 = b.try_transpose(&pb)?.try_reshape(&[nb, nk, nn])?;
        let r = a3.try_matmul(&b3)?;
        let labels: Vec<char> = batch.iter().chain(&fa).chain(&fb).copied().collect();
        let dims: Vec<i64> = labels.iter().map(|c| size[c] as i64).collect();
        (r.try_reshape(&dims)?, labels)
    };
    // Sum labels still present but not in the output (one-operand case), then order.
    let drop: Vec<i64> = labels
        .iter()
        .enumerate()
        .filter(|(_, c)| !out.contains(c))
        .map(|(i, _)| i as i64)
        .collect();
    let (res, labels) = if drop.is_empty() {
        (res, labels)
    } else {
        let kept: Vec<char> = labels.iter().filter(|c| out.contains(c)).copied().collect();
        (
            res.try_reduce(rlx_ir::op::ReduceOp::Sum, drop, false)?,
            kept,
        )
    };
    let perm: Vec<i64> = out
        .iter()
        .map(|c| labels.iter().position(|x| x == c).expect("label") as i64)
        .collect();
    res.try_transpose(&perm)
}
