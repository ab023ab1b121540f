//! MatMul, Gemm, Einsum.

use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, DotDims, ReduceOp};
use rlx_ir::{NodeId, Op};

op_table! {
    "MatMul" => |cx| { let (a, b) = (cx.x(0)?, cx.x(1)?); Ok(vec![cx.node(Op::MatMul, &[a, b], None)?]) },
    "Gemm" => gemm,
    "Einsum" => einsum,
}

fn gemm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (mut a, mut b) = (cx.x(0)?, cx.x(1)?);
    if cx.rank(a) != 2 || cx.rank(b) != 2 {
        return Err(cx.err("A and B must be 2-d"));
    }
    if cx.attr_i("transA", 0) != 0 {
        a = cx.transpose(a, vec![1, 0])?;
    }
    if cx.attr_i("transB", 0) != 0 {
        b = cx.transpose(b, vec![1, 0])?;
    }
    let mut y = cx.node(Op::MatMul, &[a, b], None)?;
    let alpha = cx.attr_f("alpha", 1.0);
    if alpha != 1.0 {
        y = cx.bin_scalar(B::Mul, y, alpha)?;
    }
    if let Some(c) = cx.opt(2) {
        let beta = cx.attr_f("beta", 1.0);
        let c = if beta != 1.0 {
            cx.bin_scalar(B::Mul, c, beta)?
        } else {
            c
        };
        y = cx.bin(B::Add, y, c)?;
    }
    Ok(vec![y])
}

/// One operand's subscripts with `...` expanded to reserved letters.
fn expand_ellipsis(
    term: &str,
    rank: usize,
    ell: &[char],
) -> std::result::Result<Vec<char>, String> {
    let letters: Vec<char> = term.chars().filter(|c| c.is_ascii_alphabetic()).collect();
    if term.contains("...") {
        let n = rank
            .checked_sub(letters.len())
            .ok_or_else(|| format!("term \"{term}\" has more letters than rank {rank}"))?;
        let (pre, post) = term.split_once("...").expect("contains");
        let mut out: Vec<char> = pre.chars().collect();
        if n > ell.len() {
            return Err(format!("term \"{term}\": {n} ellipsis dims"));
        }
        out.extend(&ell[ell.len() - n..]);
        out.extend(post.chars());
        Ok(out)
    } else if letters.len() != rank {
        Err(format!("term \"{term}\" does not match rank {rank}"))
    } else {
        Ok(letters)
    }
}

/// Sums out every axis whose letter `keep` rejects.
fn sum_out(
    cx: &mut NodeCx,
    x: NodeId,
    sub: &mut Vec<char>,
    keep: impl Fn(char) -> bool,
) -> Result<NodeId> {
    let axes: Vec<usize> = (0..sub.len()).filter(|&i| !keep(sub[i])).collect();
    if axes.is_empty() {
        return Ok(x);
    }
    sub.retain(|&c| keep(c));
    cx.reduce(ReduceOp::Sum, x, axes, false)
}

/// Einsum over one or two operands without repeated letters in a term
/// (no diagonals); contraction via `dot_general`.
fn einsum(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let eq: String = cx
        .attr_s("equation", "")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != cx.n_inputs() || terms.len() > 2 {
        return Err(cx.unsupported(format!(
            "einsum \"{eq}\": only one or two operands are supported"
        )));
    }
    let ell: Vec<char> = "ABCDEFGHIJKLMNOPQRSTUVWXYZ".chars().collect();
    let mut subs = Vec::new();
    let mut xs = Vec::new();
    let mut max_ell = 0;
    for (i, t) in terms.iter().enumerate() {
        let x = cx.x(i)?;
        let s = expand_ellipsis(t, cx.rank(x), &ell).map_err(|e| cx.err(e))?;
        if t.contains("...") {
            max_ell = max_ell.max((cx.rank(x) + 3).saturating_sub(t.len()));
        }
        let mut seen = s.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != s.len() {
            return Err(cx.unsupported(format!(
                "einsum \"{eq}\": repeated subscripts (diagonals) are not supported"
            )));
        }
        subs.push(s);
        xs.push(x);
    }
    let out: Vec<char> = match rhs {
        Some(r) => expand_ellipsis(
            &r,
            r.chars().filter(|c| c.is_ascii_alphabetic()).count()
                + if r.contains("...") { max_ell } else { 0 },
            &ell,
        )
        .map_err(|e| cx.err(e))?,
        None => {
            // Implicit output: ellipsis letters, then letters seen once, sorted.
            let all: Vec<char> = subs.concat();
            let mut once: Vec<char> = all
                .iter()
                .copied()
                .filter(|c| c.is_ascii_lowercase() && all.iter().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort_unstable();
            let mut o: Vec<char> = ell[ell.len() - max_ell.min(ell.len())..].to_vec();
            o.extend(once);
            o
        }
    };
    let (mut x, mut sx) = (xs[0], subs[0].clone());
    if xs.len() == 2 {
        let (y, mut sy) = (xs[1], subs[1].clone());
        // Letters only in one operand and not in the output are summed first.
        let (ox, oy) = (sx.clone(), sy.clone());
        x = sum_out(cx, x, &mut sx, |c| out.contains(&c) || oy.contains(&c))?;
        let y = sum_out(cx, y, &mut sy, |c| out.contains(&c) || ox.contains(&c))?;
        let batch: Vec<char> = sx
            .iter()
            .copied()
            .filter(|c| sy.contains(c) && out.contains(c))
            .collect();
        let contract: Vec<char> = sx
            .iter()
            .copied()
            .filter(|c| sy.contains(c) && !out.contains(c))
            .collect();
        let pos = |s: &[char], c: char| s.iter().position(|&d| d == c).expect("letter");
        let dims = DotDims {
            lhs_batch: batch.iter().map(|&c| pos(&sx, c)).collect(),
            rhs_batch: batch.iter().map(|&c| pos(&sy, c)).collect(),
            lhs_contract: contract.iter().map(|&c| pos(&sx, c)).collect(),
            rhs_contract: contract.iter().map(|&c| pos(&sy, c)).collect(),
        };
        let mut res: Vec<char> = batch.clone();
        res.extend(sx.iter().filter(|c| !sy.contains(c)));
        res.extend(sy.iter().filter(|c| !sx.contains(c)));
        x = cx.node(Op::DotGeneral(dims), &[x, y], None)?;
        sx = res;
    } else {
        x = sum_out(cx, x, &mut sx, |c| out.contains(&c))?;
    }
    if sx.len() != out.len() {
        return Err(cx.err(format!(
            "einsum \"{eq}\": output letters {out:?} do not match {sx:?}"
        )));
    }
    let perm: Vec<usize> = out
        .iter()
        .map(|c| sx.iter().position(|d| d == c))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| cx.err(format!("einsum \"{eq}\": output letter not in any operand")))?;
    Ok(vec![cx.transpose(x, perm)?])
}
