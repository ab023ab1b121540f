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
#[path = "common/random_graphs.rs"]
mod random_graphs;
use random_graphs::{build, build_blocks, run_unoptimised as run, D, T};

/// Parses the full text of `g` and checks it prints back the same.
fn reparse(g: &Graph) -> Graph {
    let text = g.to_text();
    let back = parse_graph(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.to_text(), text);
    back
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
