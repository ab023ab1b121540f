//! Higher-order derivatives by repeated reverse mode.

use crate::emit::sum;
use crate::prepare::leaf_named;
use crate::reverse::grad_with_loss;
use crate::{AutodiffError, Result};
use rlx_ir::{node_label, Graph};

/// What [`nth_order_grad`] returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HigherOrderOptions {
    /// Output every order `1..=n`, not only the `n`-th.
    pub all_orders: bool,
}

/// The `order`-th derivative of the scalar first output with respect to the
/// leaf `wrt_name`. For a non-scalar leaf each order differentiates the sum
/// of the previous one (elementwise derivatives for elementwise functions).
pub fn nth_order_grad(
    g: &Graph,
    wrt_name: &str,
    order: usize,
    opts: &HigherOrderOptions,
) -> Result<Graph> {
    let loss = *g
        .outputs()
        .first()
        .ok_or_else(|| AutodiffError::InvalidGraph("no outputs".into()))?;
    if g.shape(loss).numel() != Some(1) {
        return Err(AutodiffError::NonScalarLoss {
            transform: "nth_order_grad",
            node: node_label(g, loss),
            shape: g.shape(loss).clone(),
        });
    }
    if order == 0 {
        return Ok(g.clone());
    }
    let mut cur = g.clone();
    cur.set_outputs(vec![loss]);
    let mut orders = Vec::with_capacity(order);
    for k in 1..=order {
        let x = leaf_named(&cur, wrt_name)?;
        let mut d = grad_with_loss(&cur, &[x])?;
        let dx = d.outputs()[1];
        // Earlier orders keep their ids: after the first pass the graph has no
        // composites left to decompose, so `prepare` copies nodes one to one.
        orders.push(dx);
        if k < order {
            let r = d.shape(dx).rank();
            let axes: Vec<usize> = (0..r).collect();
            let s = sum(&mut d, dx, &axes, false)?;
            d.set_outputs(vec![s]);
        }
        cur = d;
    }
    cur.set_outputs(if opts.all_orders {
        orders
    } else {
        vec![*orders.last().expect("order >= 1")]
    });
    Ok(cur)
}
