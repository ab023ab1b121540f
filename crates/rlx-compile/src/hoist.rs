//! Param hoisting: the part of a graph that depends only on params and
//! constants (a transpose or cast of a weight, Q / K / V weights stacked
//! into one matrix) computes the same value on every run until a param
//! changes. [`split_param_prelude`] cuts it out into a *prelude* graph the
//! runtime evaluates once after params are set; in the *main* graph each
//! value the rest reads from it becomes a derived param that the prelude's
//! outputs fill. A hoisted value that only moves param bytes (a concat of
//! whole weights, a reshape, a unit-step slice) is not computed at all: it
//! is an [`AssembledParam`], written piece by piece as its params are set,
//! so those params are held once.

mod layout;

use rlx_ir::{Graph, NodeId, Op};
use std::ops::Range;

/// A graph split into its param-only prelude and the main graph that reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamPrelude {
    /// Computes the hoisted values from the params it declares (names as
    /// in the original graph) and constants; one output per derived param.
    pub prelude: Graph,
    /// The original graph with each hoisted value replaced by a derived
    /// param; the params only the prelude read are gone.
    pub main: Graph,
    /// The derived params of `main` the prelude computes, in its output order.
    pub derived: Vec<String>,
    /// The derived params of `main` that are params' bytes moved (no
    /// prelude output): each is filled from its pieces.
    pub assembled: Vec<AssembledParam>,
}

/// A derived param whose bytes are bytes of params, in order: e.g. Q, K
/// and V weights stacked into one matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssembledParam {
    /// Its name in the main graph.
    pub name: String,
    /// Where its bytes come from, in order; together they cover it exactly.
    pub pieces: Vec<ParamPiece>,
}

/// A run of a param's bytes copied into an [`AssembledParam`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamPiece {
    /// The param (its name in the original graph).
    pub param: String,
    /// The bytes of the param (row-major, little-endian).
    pub bytes: Range<usize>,
    /// Where they go in the assembled param, in bytes.
    pub offset: usize,
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
    // Boundary values that only move param bytes are assembled, not computed.
    let runs = layout::param_runs(g, &hoist);
    let assembled: Vec<bool> = g
        .ids()
        .map(|id| boundary[id.index()] && runs[id.index()].is_some())
        .collect();

    // What hoisted values read (params, constants, constant sub-expressions
    // when folding is off); the prelude is what its outputs read.
    let reads = |roots: &[bool]| {
        let mut read = roots.to_vec();
        for id in g.ids().rev() {
            if read[id.index()] {
                for &x in &g.node(id).inputs {
                    read[x.index()] = true;
                }
            }
        }
        read
    };
    let feeds_hoisted = reads(&hoist);
    let computed: Vec<bool> = g
        .ids()
        .map(|id| boundary[id.index()] && !assembled[id.index()])
        .collect();
    let in_prelude = reads(&computed);
    let mut prelude = Graph::new(format!("{}.prelude", g.name()));
    let mut pmap = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids().filter(|&i| in_prelude[i.index()]) {
        pmap[id.index()] = copy_mapped(&mut prelude, g, id, &pmap);
    }
    let outs: Vec<NodeId> = g.ids().filter(|&i| computed[i.index()]).collect();
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
        if feeds_hoisted[i] && !hoist[i] && !is_output[i] && !readers[i].is_empty() {
            prelude_only[i] = readers[i].iter().all(|r| prelude_only[r.index()]);
        }
    }
    let mut main = Graph::new(g.name());
    let mut mmap = vec![NodeId(u32::MAX); g.len()];
    let (mut derived, mut assembled_params) = (Vec::new(), Vec::new());
    for id in g.ids() {
        let n = g.node(id);
        if boundary[id.index()] {
            // Numbered in order, so equal main graphs get equal names.
            let name = format!(
                "{DERIVED_PARAM_PREFIX}{}",
                derived.len() + assembled_params.len()
            );
            mmap[id.index()] = main.param(&name, n.shape.clone());
            match &runs[id.index()] {
                Some(runs) if assembled[id.index()] => {
                    assembled_params.push(assemble(g, name, runs))
                }
                _ => derived.push(name),
            }
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
        assembled: assembled_params,
    })
}

/// The pieces of derived param `name` from its runs of param bytes.
fn assemble(g: &Graph, name: String, runs: &[layout::Run]) -> AssembledParam {
    let mut offset = 0;
    let pieces = runs
        .iter()
        .map(|r| {
            let Op::Param { name: param } = &g.node(r.param).op else {
                unreachable!("runs are bytes of params")
            };
            let piece = ParamPiece {
                param: param.clone(),
                bytes: r.bytes.clone(),
                offset,
            };
            offset += r.bytes.len();
            piece
        })
        .collect();
    AssembledParam { name, pieces }
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
        // w^T is computed by the prelude; b reshaped only moves b's bytes.
        assert_eq!(split.derived, ["hoisted.0"]);
        let pieces = vec![ParamPiece {
            param: "b".into(),
            bytes: 0..16,
            offset: 0,
        }];
        let want = AssembledParam {
            name: "hoisted.1".into(),
            pieces,
        };
        assert_eq!(split.assembled, [want]);
        // main: x, the derived w^T and b, matmul, add; w and b are gone.
        let names: Vec<String> = split
            .main
            .params()
            .iter()
            .map(|p| p.1.to_string())
            .collect();
        assert_eq!(names, ["hoisted.0", "hoisted.1"]);
        assert_eq!(split.main.len(), 5, "{}", split.main);
        assert_eq!(split.prelude.params().len(), 1, "{}", split.prelude);
        assert_eq!(split.prelude.outputs().len(), 1);
        assert!(rlx_ir::verify_all(&split.main).is_empty());
        assert!(rlx_ir::verify_all(&split.prelude).is_empty());
    }

    #[test]
    fn stacked_param_weights_are_assembled_not_computed() {
        let mut g = Graph::new("qkv");
        let x = g.input("x", Shape::new(&[2, 3], DType::F32));
        let ws: Vec<NodeId> = ["q", "k", "v"]
            .iter()
            .map(|n| g.param(n, Shape::new(&[3, 4], DType::F32)))
            .collect();
        let cat = g.concat_(&ws, 0);
        let stacked = g.reshape_(cat, &[3, 3, 4]);
        let y = g.mm(x, stacked);
        g.set_outputs(vec![y]);
        let split = split_param_prelude(&g).expect("the stack is hoisted");
        assert!(split.derived.is_empty());
        assert!(split.prelude.outputs().is_empty(), "{}", split.prelude);
        assert!(split.prelude.params().is_empty(), "{}", split.prelude);
        let [a] = &split.assembled[..] else {
            panic!("one assembled param: {:?}", split.assembled)
        };
        let got: Vec<(&str, Range<usize>, usize)> = a
            .pieces
            .iter()
            .map(|p| (p.param.as_str(), p.bytes.clone(), p.offset))
            .collect();
        assert_eq!(got, [("q", 0..48, 0), ("k", 0..48, 48), ("v", 0..48, 96)]);
        let names: Vec<&str> = split.main.params().iter().map(|p| p.1).collect();
        assert_eq!(names, ["hoisted.0"], "{}", split.main);
        assert!(rlx_ir::verify_all(&split.main).is_empty());
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
