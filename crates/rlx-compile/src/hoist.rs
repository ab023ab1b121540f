//! Param hoisting: the part of a graph that depends only on params and
//! constants (a transpose or cast of a weight, Q / K / V weights stacked
//! into one matrix) computes the same value on every run until a param
//! changes. [`split_param_prelude`] cuts it out into a *prelude* graph the
//! runtime evaluates once after params are set; in the *main* graph each
//! value the rest reads from it becomes a derived param that the prelude's
//! outputs fill.

use rlx_ir::{Graph, NodeId, Op};

/// A graph split into its param-only prelude and the main graph that reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamPrelude {
    /// Computes the hoisted values from the params it declares (names as
    /// in the original graph) and constants; one output per derived param.
    pub prelude: Graph,
    /// The original graph with each hoisted value replaced by a derived
    /// param; the params only the prelude read are gone.
    pub main: Graph,
    /// The derived params of `main`, in the prelude's output order.
    pub derived: Vec<String>,
}

/// The prefix of derived-param names ([`ParamPrelude::derived`]).
pub const DERIVED_PARAM_PREFIX: &str = "hoisted.";

/// True for ops that are pure functions of their inputs and cheap to
/// describe as a standalone graph (control flow and user functions stay).
fn hoistable_op(op: &Op) -> bool {
    !op.is_leaf()
        && !matches!(
            op,
            Op::If(_) | Op::While(_) | Op::Scan(_) | Op::CustomFn(_) | Op::TupleGet { .. }
        )
}

/// Largest hoisted value that is bigger than its inputs together (a
/// broadcast): beyond it, computing per run is cheaper than storing it.
const MAX_GROWN_BYTES: usize = 1 << 20;

/// True when node `id` is not static or would store much more than it reads.
fn grows(g: &Graph, id: NodeId) -> bool {
    let n = g.node(id);
    let Some(out) = n.shape.size_bytes() else {
        return true;
    };
    let read: usize = n
        .inputs
        .iter()
        .map(|&i| g.shape(i).size_bytes().unwrap_or(0))
        .sum();
    n.shape.static_dims().is_none() || (out > read && out > MAX_GROWN_BYTES)
}

/// Splits `g` into a param prelude and a main graph, or `None` when no
/// value depends only on params and constants.
pub fn split_param_prelude(g: &Graph) -> Option<ParamPrelude> {
    // param_only: computed from params and constants, at least one param.
    let mut const_only = vec![false; g.len()];
    let mut hoist = vec![false; g.len()];
    for id in g.ids() {
        let n = g.node(id);
        let i = id.index();
        match n.op {
            Op::Constant { .. } => const_only[i] = true,
            Op::Param { .. } | Op::Input { .. } => {}
            _ => {
                let leafy = |x: &NodeId| {
                    const_only[x.index()]
                        || hoist[x.index()]
                        || matches!(g.node(*x).op, Op::Param { .. })
                };
                let all_known = !n.inputs.is_empty() && n.inputs.iter().all(leafy);
                if all_known && n.inputs.iter().all(|x| const_only[x.index()]) {
                    const_only[i] = true;
                } else if all_known && hoistable_op(&n.op) && !grows(g, id) {
                    hoist[i] = true;
                }
            }
        }
    }
    // Boundary: hoisted values read by the main graph (or outputs). A
    // reshape of a param is hoisted too: in main it would be a copy.
    let mut boundary = vec![false; g.len()];
    for id in g.ids() {
        if !hoist[id.index()] {
            for &x in &g.node(id).inputs {
                boundary[x.index()] |= hoist[x.index()];
            }
        }
    }
    for &o in g.outputs() {
        boundary[o.index()] |= hoist[o.index()];
    }
    if !hoist.iter().any(|&h| h) {
        return None;
    }

    // The prelude: hoisted nodes and everything they read (params, constants,
    // constant sub-expressions when folding is off).
    let mut in_prelude = hoist.clone();
    for id in g.ids().rev() {
        if in_prelude[id.index()] {
            for &x in &g.node(id).inputs {
                in_prelude[x.index()] = true;
            }
        }
    }
    let mut prelude = Graph::new(format!("{}.prelude", g.name()));
    let mut pmap = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids().filter(|&i| in_prelude[i.index()]) {
        pmap[id.index()] = copy_mapped(&mut prelude, g, id, &pmap);
    }
    let outs: Vec<NodeId> = g.ids().filter(|&i| boundary[i.index()]).collect();
    prelude.set_outputs(outs.iter().map(|o| pmap[o.index()]).collect());

    // The main graph: boundary values as derived params, the rest copied,
    // but for what only the prelude reads (readers come after their inputs,
    // so one backward sweep settles it).
    let mut readers: Vec<Vec<NodeId>> = vec![Vec::new(); g.len()];
    for id in g.ids() {
        for &x in &g.node(id).inputs {
            readers[x.index()].push(id);
        }
    }
    let mut is_output = vec![false; g.len()];
    for &o in g.outputs() {
        is_output[o.index()] = true;
    }
    let mut prelude_only = hoist.clone();
    for id in g.ids().rev() {
        let i = id.index();
        if in_prelude[i] && !hoist[i] && !is_output[i] && !readers[i].is_empty() {
            prelude_only[i] = readers[i].iter().all(|r| prelude_only[r.index()]);
        }
    }
    let mut main = Graph::new(g.name());
    let mut mmap = vec![NodeId(u32::MAX); g.len()];
    let mut derived = Vec::new();
    for id in g.ids() {
        let n = g.node(id);
        if boundary[id.index()] {
            // Numbered in order, so equal main graphs get equal names.
            let name = format!("{DERIVED_PARAM_PREFIX}{}", derived.len());
            let p = main.param(&name, n.shape.clone());
            mmap[id.index()] = p;
            derived.push(name);
        } else if prelude_only[id.index()] {
            continue;
        } else {
            mmap[id.index()] = copy_mapped(&mut main, g, id, &mmap);
        }
    }
    main.set_outputs(g.outputs().iter().map(|o| mmap[o.index()]).collect());
    Some(ParamPrelude {
        prelude,
        main,
        derived,
    })
}

fn copy_mapped(out: &mut Graph, g: &Graph, id: NodeId, map: &[NodeId]) -> NodeId {
    let mut node = g.node(id).clone();
    node.inputs = node.inputs.iter().map(|i| map[i.index()]).collect();
    out.push_verified(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{DType, GraphExt, Shape};

    #[test]
    fn a_transposed_weight_and_a_reshaped_bias_are_hoisted() {
        let mut g = Graph::new("lin");
        let x = g.input("x", Shape::new(&[2, 3], DType::F32));
        let w = g.param("w", Shape::new(&[4, 3], DType::F32));
        let b = g.param("b", Shape::new(&[4], DType::F32));
        let wt = g.transpose_(w, &[1, 0]);
        let y = g.mm(x, wt);
        let b2 = g.reshape_(b, &[1, 4]);
        let y = g.add(y, b2);
        g.set_outputs(vec![y]);
        let split = split_param_prelude(&g).expect("the transpose is hoisted");
        assert_eq!(split.derived.len(), 2);
        // main: x, the derived w^T and b, matmul, add; w and b are gone.
        let names: Vec<String> = split
            .main
            .params()
            .iter()
            .map(|p| p.1.to_string())
            .collect();
        assert_eq!(names, split.derived);
        assert_eq!(split.main.len(), 5, "{}", split.main);
        assert_eq!(split.prelude.params().len(), 2);
        assert_eq!(split.prelude.outputs().len(), 2);
        assert!(rlx_ir::verify_all(&split.main).is_empty());
        assert!(rlx_ir::verify_all(&split.prelude).is_empty());
    }

    #[test]
    fn a_big_broadcast_of_a_param_is_computed_per_run() {
        let mut g = Graph::new("bcast");
        let x = g.input("x", Shape::new(&[1024, 512], DType::F32));
        let s = g.param("s", Shape::new(&[1], DType::F32));
        let big = g.try_node(
            Op::Broadcast,
            &[s],
            Some(Shape::new(&[1024, 512], DType::F32)),
        );
        let y = g.mul(x, big.unwrap());
        g.set_outputs(vec![y]);
        assert!(split_param_prelude(&g).is_none());
    }

    #[test]
    fn graphs_without_param_only_values_are_not_split() {
        let mut g = Graph::new("plain");
        let x = g.input("x", Shape::new(&[3], DType::F32));
        let w = g.param("w", Shape::new(&[3], DType::F32));
        let c = g.exp(x);
        let y = g.mul(c, w);
        g.set_outputs(vec![y]);
        assert!(split_param_prelude(&g).is_none());
    }
}
