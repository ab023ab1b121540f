//! Derivative rules of matmul and dot_general.

use crate::emit::*;
use crate::Result;
use rlx_ir::op::DotDims;
use rlx_ir::{Graph, NodeId, Op};

/// numpy-promoted operand dims and the promoted output dims of `a @ b`.
fn promoted(a: &[usize], b: &[usize]) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let a2 = if a.len() == 1 {
        vec![1, a[0]]
    } else {
        a.to_vec()
    };
    let b2 = if b.len() == 1 {
        vec![b[0], 1]
    } else {
        b.to_vec()
    };
    let (ba, bb) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let rank = ba.len().max(bb.len());
    let mut y2: Vec<usize> = (0..rank)
        .map(|i| {
            let da = (i + ba.len()).checked_sub(rank).map_or(1, |j| ba[j]);
            let db = (i + bb.len()).checked_sub(rank).map_or(1, |j| bb[j]);
            da.max(db)
        })
        .collect();
    y2.push(a2[a2.len() - 2]);
    y2.push(b2[b2.len() - 1]);
    (a2, b2, y2)
}

/// Reverse mode of numpy matmul: `da = ct @ bᵀ`, `db = aᵀ @ ct`, batch broadcasting undone.
pub fn vjp_matmul(g: &mut Graph, a: NodeId, b: NodeId, ct: NodeId) -> Result<Vec<Option<NodeId>>> {
    let (ad, bd) = (dims(g, a)?, dims(g, b)?);
    let (a2d, b2d, y2d) = promoted(&ad, &bd);
    let a2 = reshape(g, a, &a2d)?;
    let b2 = reshape(g, b, &b2d)?;
    let ct2 = reshape(g, ct, &y2d)?;
    let bt = mt(g, b2)?;
    let da = matmul(g, ct2, bt)?;
    let da = sum_to(g, da, &a2d)?;
    let at = mt(g, a2)?;
    let db = matmul(g, at, ct2)?;
    let db = sum_to(g, db, &b2d)?;
    Ok(vec![Some(reshape(g, da, &ad)?), Some(reshape(g, db, &bd)?)])
}

fn dot(g: &mut Graph, a: NodeId, b: NodeId, d: DotDims) -> Result<NodeId> {
    Ok(g.try_node(Op::DotGeneral(d), &[a, b], None)?)
}

/// Reverse mode of dot_general. The output is `[batch, a_free, b_free]`; each
/// operand's cotangent contracts `ct` with the other operand over the other's
/// free dims, then is permuted back into the operand's axis order.
pub fn vjp_dot_general(
    g: &mut Graph,
    d: &DotDims,
    a: NodeId,
    b: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let (ra, rb) = (g.shape(a).rank(), g.shape(b).rank());
    let free = |r: usize, batch: &[usize], con: &[usize]| -> Vec<usize> {
        (0..r)
            .filter(|i| !batch.contains(i) && !con.contains(i))
            .collect()
    };
    let fa = free(ra, &d.lhs_batch, &d.lhs_contract);
    let fb = free(rb, &d.rhs_batch, &d.rhs_contract);
    let nbatch = d.lhs_batch.len();
    let ct_batch: Vec<usize> = (0..nbatch).collect();
    let ct_afree: Vec<usize> = (nbatch..nbatch + fa.len()).collect();
    let ct_bfree: Vec<usize> = (nbatch + fa.len()..nbatch + fa.len() + fb.len()).collect();
    // da: ct [batch, fa, fb] · b over fb -> [batch, fa, b_contract (rhs_contract order)]
    let da = dot(
        g,
        ct,
        b,
        DotDims {
            lhs_batch: ct_batch.clone(),
            rhs_batch: d.rhs_batch.clone(),
            lhs_contract: ct_bfree,
            rhs_contract: fb.clone(),
        },
    )?;
    // Free dims come out in the other operand's axis order; map them to the paired axes.
    let paired = |own: &[usize], other: &[usize]| -> Vec<usize> {
        let mut sorted = other.to_vec();
        sorted.sort_unstable();
        sorted
            .iter()
            .map(|j| own[other.iter().position(|x| x == j).expect("paired dim")])
            .collect()
    };
    // axis k of da holds a's axis order_a[k]
    let order_a: Vec<usize> = d
        .lhs_batch
        .iter()
        .chain(&fa)
        .copied()
        .chain(paired(&d.lhs_contract, &d.rhs_contract))
        .collect();
    let da = transpose(g, da, &inverse_perm(&order_a))?;
    // db: ct · a over fa -> [batch, fb, a_contract]; a's contract dims pair with b's rhs_contract
    let db = dot(
        g,
        ct,
        a,
        DotDims {
            lhs_batch: ct_batch,
            rhs_batch: d.lhs_batch.clone(),
            lhs_contract: ct_afree,
            rhs_contract: fa.clone(),
        },
    )?;
    let order_b: Vec<usize> = d
        .rhs_batch
        .iter()
        .chain(&fb)
        .copied()
        .chain(paired(&d.rhs_contract, &d.lhs_contract))
        .collect();
    let db = transpose(g, db, &inverse_perm(&order_b))?;
    Ok(vec![Some(da), Some(db)])
}
