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

/// `x -> x * k` on `f32[3]`.
fn scaled(name: &str, k: f32) -> Graph {
    use rlx_ir::{DType, GraphExt, Shape};
    let mut b = Graph::new(name);
    let x = b.input("x", Shape::new(&[3], DType::F32));
    let y = b.mul(x, k);
    b.set_outputs(vec![y]);
    b
}

/// Control flow (an `if` whose branch holds a `while`, and a `scan`) reads
/// back and runs the same.
#[test]
fn control_flow_reads_back_and_runs_the_same() {
    use rlx_ir::ops::control::{try_if, try_scan, try_while};
    use rlx_ir::{DType, GraphExt, HostTensor, Shape};
    let f32s = |d: &[usize]| Shape::new(d, DType::F32);
    let mut cond = Graph::new("cond");
    let cx = cond.input("x", f32s(&[3]));
    let s = cond.sum(cx, &[0], false);
    let go = cond.lt(s, 50.0);
    cond.set_outputs(vec![go]);
    let mut then_b = Graph::new("then");
    let tx = then_b.input("x", f32s(&[3]));
    let looped = try_while(&mut then_b, cond, scaled("double", 2.0), &[tx], 100).unwrap();
    then_b.set_outputs(looped);
    let mut g = Graph::new("flow");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let x = g.input("x", f32s(&[3]));
    let xs = g.input("xs", f32s(&[4, 3]));
    let branch = try_if(&mut g, p, then_b, scaled("else", -1.0), &[x]).unwrap();
    let mut step = Graph::new("step");
    let c = step.input("c", f32s(&[3]));
    let xt = step.input("x_t", f32s(&[3]));
    let nc = step.add(c, xt);
    let y = step.tanh(nc);
    step.set_outputs(vec![nc, y]);
    let (carry, ys) = try_scan(&mut g, step, &branch, &[xs], false).unwrap();
    g.set_outputs(vec![carry[0], ys[0]]);
    let parsed = reparse(&g);
    let xs_v: Vec<f32> = (0..12).map(|i| (i as f32 * 0.3).sin()).collect();
    for pred in [true, false] {
        let feeds = [
            ("p", HostTensor::scalar(pred)),
            (
                "x",
                HostTensor::from_slice(&[1.0f32, 2.0, 0.5], &[3]).unwrap(),
            ),
            ("xs", HostTensor::from_slice(&xs_v, &[4, 3]).unwrap()),
        ];
        let refs: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
        let run = |g: &Graph| {
            let mut c = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
            c.try_run_typed(&refs).unwrap()
        };
        assert_eq!(run(&g), run(&parsed));
    }
}
