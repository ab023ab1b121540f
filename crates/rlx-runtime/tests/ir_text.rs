//! The textual IR on random programs (the generators of
//! `pass_equivalence.rs`): print -> parse -> print is the identity for the
//! input graph and for the graph after every compiler pass (fused regions,
//! matmul epilogues, add + norm, gated matmuls, attention), and the parsed
//! graphs compute what the originals do.

use proptest::prelude::*;
use rlx_compile::PipelineInspect;
use rlx_driver::Device;
use rlx_ir::{parse_graph, Graph};
use rlx_runtime::{CompileOptions, Session};

mod common;
use common::values;
#[path = "common/random_graphs.rs"]
mod random_graphs;
use random_graphs::{build, build_blocks, D, T};

/// Parses the full text of `g` and checks it prints back the same.
fn reparse(g: &Graph) -> Graph {
    let text = g.to_text();
    let back = parse_graph(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.to_text(), text);
    back
}

/// Runs `g` unoptimised on the inputs it declares (`a`, `b` or `x`, `y`).
fn run(g: &Graph) -> Vec<Vec<f32>> {
    let off = CompileOptions::default().optimize(false);
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), &off)
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{g}"));
    let feeds: Vec<(String, Vec<f32>)> = g
        .inputs()
        .iter()
        .enumerate()
        .map(|(i, (_, name, shape))| {
            let n = shape.numel().unwrap();
            (name.to_string(), values(n, 17 + i as u64, 1.0))
        })
        .collect();
    let refs: Vec<(&str, &[f32])> = feeds.iter().map(|(n, v)| (n.as_str(), &v[..])).collect();
    c.try_run(&refs).unwrap()
}

/// Every stage of the default pipeline round-trips; the parsed input and
/// the parsed final stage compute the original's results.
fn check(g: &Graph, tol: f32) {
    let reference = run(g);
    let parsed = reparse(g);
    let same = run(&parsed);
    assert_eq!(format!("{reference:?}"), format!("{same:?}"), "{g}");
    let opts = CompileOptions::default().keep_stages(true);
    let c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), &opts)
        .unwrap();
    let stages = PipelineInspect::of(g, c.lir()).stages;
    assert!(stages.len() > 2, "no stages kept");
    for (_, stage) in &stages {
        reparse(stage);
    }
    let last = reparse(&stages.last().unwrap().1);
    for (a, b) in run(&last).iter().zip(&reference) {
        for (u, v) in a.iter().zip(b) {
            assert!(
                (u - v).abs() <= tol * (1.0 + v.abs()) || (u.is_nan() && v.is_nan()),
                "{u} vs {v}\n{last}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_programs_read_back_and_run_the_same(steps in prop::collection::vec((0u8..16, 0usize..64, 0usize..64), 1..14)) {
        check(&build(&steps), 0.0);
    }

    #[test]
    fn random_blocks_read_back_and_run_the_same(steps in prop::collection::vec((0u8..8, 0usize..64, 0usize..64), 1..10)) {
        let g = build_blocks(&steps);
        assert_eq!(g.inputs().len(), 2);
        assert_eq!(g.shape(g.inputs()[0].0).numel(), Some(T * D));
        check(&g, 1e-5);
    }
}
