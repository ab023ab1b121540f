//! Channel concats joined in place (each part's producer writes straight
//! into the concat's slot; the concat runs nothing) against numpy float64
//! (tools/gen_concat_in_place_fixtures.py) at 1 to 3 threads: a YOLO-like
//! CSP block and an SPPF pool chain at batch 1 (joined), a U-Net-like skip
//! whose part lives across the down / up path (joined), and concats that
//! must keep their copy: a part that is a graph input, a part read by a
//! second concat (the first joins, the second copies), the CSP block at
//! batch 2 (its parts interleave). Each test asserts which concats were
//! joined and why the others were not (`concat_slots::decide_joins`).

mod common;

use common::yolo_net::{floats, input, Cbs};
use rlx_compile::concat_slots::{decide_joins, KeepCopy};
use rlx_compile::{lower, LirModule, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, Shape};
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/concat_in_place.json");

fn lower_cpu(g: &Graph) -> LirModule {
    lower(g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap()
}

/// Per concat of the lowered graph, in schedule order: `Ok` when the plan
/// joined it, else why it kept its copy.
fn concat_decisions(lir: &LirModule) -> Vec<Result<(), KeepCopy>> {
    let joins = decide_joins(&lir.graph, lir.plan.alignment);
    lir.graph
        .ids()
        .filter(|&id| matches!(lir.graph.node(id).op, Op::Concat { .. }))
        .map(|id| {
            let planned = lir.plan.is_joined(id.index());
            match joins.decisions[id.index()].clone().unwrap() {
                Ok(_) => {
                    assert!(planned, "the plan did not join %{}", id.index());
                    Ok(())
                }
                Err(why) => {
                    assert!(!planned, "the plan joined %{} ({why:?})", id.index());
                    Err(why)
                }
            }
        })
        .collect()
}

/// Runs `lir` on `x` at 1-3 threads against the fixture's `key` (one
/// output per entry of its `y`).
fn check(lir: LirModule, x: &HostTensor, key: &str) {
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    let mut exe = CpuExecutable::new(lir).unwrap();
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let got = exe.run(&[x]).unwrap();
        let want = fx[key]["y"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{key}");
        for (k, (got, want)) in got.iter().zip(want).enumerate() {
            let (got, want) = (got.to_vec::<f32>().unwrap(), floats(want));
            assert_eq!(got.len(), want.len(), "{key} output {k}");
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "{key} output {k}, threads {threads} [{i}]: {g} vs {w}"
                );
            }
        }
    }
}

/// The script's `csp` at `batch`.
fn csp(batch: usize) -> Graph {
    let mut g = Graph::new("csp");
    let x = g.input("x", Shape::new(&[batch, 16, 13, 15], DType::F32));
    let y = Cbs { seed: 201 }.csp(&mut g, x, 1);
    g.set_outputs(vec![y]);
    g
}

#[test]
fn csp_block_joins_its_concat() {
    let lir = lower_cpu(&csp(1));
    assert_eq!(concat_decisions(&lir), vec![Ok(())]);
    check(lir, &input(&[1, 16, 13, 15], 200), "csp_b1");
}

#[test]
fn batch_two_keeps_the_copy() {
    let lir = lower_cpu(&csp(2));
    assert_eq!(concat_decisions(&lir), vec![Err(KeepCopy::LeadingDims)]);
    check(lir, &input(&[2, 16, 13, 15], 200), "csp_b2");
}

#[test]
fn sppf_pool_chain_joins_its_concat() {
    let mut g = Graph::new("sppf");
    let x = g.input("x", Shape::new(&[1, 32, 9, 7], DType::F32));
    let y = Cbs { seed: 221 }.sppf(&mut g, x);
    g.set_outputs(vec![y]);
    let lir = lower_cpu(&g);
    assert_eq!(concat_decisions(&lir), vec![Ok(())]);
    check(lir, &input(&[1, 32, 9, 7], 220), "sppf");
}

/// `relu(conv3(x) + b)`.
fn cbr(p: &mut Cbs, g: &mut Graph, x: NodeId, shape: (usize, usize, usize)) -> NodeId {
    let v = p.conv_bias(g, x, shape, 1);
    g.relu(v)
}

#[test]
fn unet_skip_joins_across_the_down_and_up_path() {
    let mut g = Graph::new("unet");
    let x = g.input("x", Shape::new(&[1, 8, 12, 10], DType::F32));
    let mut p = Cbs { seed: 241 };
    let skip = cbr(&mut p, &mut g, x, (8, 16, 3));
    let pooled = g.max_pool2d(skip, [2, 2], [2, 2], [0, 0]);
    let m = cbr(&mut p, &mut g, pooled, (16, 32, 3));
    let (w, b) = p.weights(&mut g, &[32, 16, 2, 2], 16);
    let up = g.conv_transpose2d(m, w, Some(b), [2, 2], [0, 0], [0, 0], 1);
    let cat = g.concat_(&[up, skip], 1);
    let y = cbr(&mut p, &mut g, cat, (32, 16, 3));
    g.set_outputs(vec![y]);
    let lir = lower_cpu(&g);
    assert_eq!(concat_decisions(&lir), vec![Ok(())]);
    // The skip (the concat's second part) is produced first: the concat's
    // slot is live from it, so the pool, the middle conv and the up conv
    // all run while the skip sits at its offset in the concat.
    let cat = (0..lir.graph.len())
        .find(|&i| lir.plan.is_joined(i))
        .unwrap();
    let parts = &lir.graph.nodes()[cat].inputs;
    let (up, skip) = (parts[0].index(), parts[1].index());
    assert!(skip < up);
    let (sc, ss) = (lir.plan.slots[cat].unwrap(), lir.plan.slots[skip].unwrap());
    assert_eq!(ss.offset, sc.offset + 16 * 12 * 10 * 4);
    check(lir, &input(&[1, 8, 12, 10], 240), "unet");
}

#[test]
fn a_graph_input_part_keeps_the_copy() {
    let mut g = Graph::new("input_part");
    let x = g.input("x", Shape::new(&[1, 16, 6, 8], DType::F32));
    let mut p = Cbs { seed: 261 };
    let a = p.conv(&mut g, x, (16, 16, 1), 1);
    let cat = g.concat_(&[x, a], 1);
    let y = p.conv(&mut g, cat, (32, 16, 1), 1);
    g.set_outputs(vec![y]);
    let lir = lower_cpu(&g);
    let decisions = concat_decisions(&lir);
    assert!(
        matches!(decisions[..], [Err(KeepCopy::PartIsInput { .. })]),
        "{decisions:?}"
    );
    check(lir, &input(&[1, 16, 6, 8], 260), "input_part");
}

#[test]
fn a_part_of_two_concats_joins_the_first_only() {
    let mut g = Graph::new("two_concats");
    let x = g.input("x", Shape::new(&[1, 16, 6, 8], DType::F32));
    let mut p = Cbs { seed: 281 };
    let s = p.conv(&mut g, x, (16, 16, 1), 1);
    let a = p.conv(&mut g, s, (16, 16, 1), 1);
    let b = p.conv(&mut g, s, (16, 16, 3), 1);
    let c1 = g.concat_(&[s, a], 1);
    let c2 = g.concat_(&[s, b], 1);
    let y1 = p.conv(&mut g, c1, (32, 16, 1), 1);
    let y2 = p.conv(&mut g, c2, (32, 16, 1), 1);
    g.set_outputs(vec![y1, y2]);
    let lir = lower_cpu(&g);
    let decisions = concat_decisions(&lir);
    assert_eq!(decisions.len(), 2);
    assert_eq!(decisions[0], Ok(()));
    assert!(
        matches!(decisions[1], Err(KeepCopy::PartOfAnotherConcat { .. })),
        "{decisions:?}"
    );
    check(lir, &input(&[1, 16, 6, 8], 280), "two_concats");
}
