//! Every optimising pass preserves numerics: random graphs (with planted
//! identities, duplicate sub-expressions and constant sub-graphs, so each
//! pass has work to do) run with all passes off, with each pass alone and
//! with all of them; the results must be identical (fused elementwise
//! regions included: they call the same scalar kernels tile by tile).

use proptest::prelude::*;
use rlx_driver::Device;
use rlx_ir::Graph;
use rlx_runtime::{CompileOptions, Session};

mod common;
use common::values;
#[path = "common/random_graphs.rs"]
mod random_graphs;
use random_graphs::{build, build_blocks, same_bits, Step, D, T};

fn run(g: &Graph, opts: &CompileOptions) -> (Vec<Vec<f32>>, usize) {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), opts)
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{g}"));
    let a = [0.3f32, -1.2, 0.7];
    let b = [1.0f32, -0.5, 0.25, 2.0, -1.5, 0.1];
    let out = c.try_run(&[("a", &a), ("b", &b)]).unwrap();
    (out, c.lir().graph.len())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn each_pass_preserves_numerics(steps in prop::collection::vec((0u8..16, 0usize..64, 0usize..64), 1..14)) {
        let g = build(&steps);
        let off = CompileOptions::default().optimize(false);
        let (reference, unoptimised_len) = run(&g, &off);
        let variants = [
            ("simplify", off.clone().simplify(true)),
            ("cse", off.clone().cse(true)),
            ("fold", off.clone().fold_constants(true)),
            ("fusion", off.clone().fusion(true)),
            ("all", CompileOptions::default()),
        ];
        for (name, opts) in variants {
            let (out, len) = run(&g, &opts);
            prop_assert!(same_bits(&reference, &out), "{name} changed the results of\n{g}\n{reference:?}\nvs\n{out:?}");
            prop_assert!(len <= unoptimised_len, "{name} grew the graph: {len} > {unoptimised_len}");
        }
    }
}

#[test]
fn planted_work_is_removed() {
    // One of every planted pattern: the optimised graph must be much smaller.
    let steps: Vec<Step> = (0..16).map(|op| (op, 1, 1)).collect();
    let g = build(&steps);
    let (_, before) = run(&g, &CompileOptions::default().optimize(false));
    let (_, after) = run(&g, &CompileOptions::default());
    assert!(after + 12 <= before, "only {before} -> {after} nodes");
}

fn run_blocks(g: &Graph, opts: &CompileOptions) -> Vec<Vec<f32>> {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), opts)
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{g}"));
    let plan = &c.lir().plan;
    rlx_compile::check_plan(&c.lir().graph, plan).unwrap();
    let (x, y) = (values(T * D, 101, 1.0), values(T * D, 202, 1.0));
    c.try_run(&[("x", &x), ("y", &y)]).unwrap()
}

fn within(x: &[Vec<f32>], y: &[Vec<f32>], tol: f32) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(p, q)| {
            p.len() == q.len()
                && p.iter()
                    .zip(q)
                    .all(|(u, v)| (u - v).abs() <= tol * (1.0 + v.abs()))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Each pattern fusion alone, then all passes: add + norm, gated matmul,
    /// shared-input matmuls and transposed operands read in place are bit-exact; attention recognition (every
    /// spelling: scaled q, divided scores, where masks) swaps the unfused
    /// softmax for the fused kernel's, and the native GELU the erf formula
    /// for its own: both stay within 1e-5.
    #[test]
    fn pattern_fusions_preserve_numerics(steps in prop::collection::vec((0u8..11, 0usize..64, 0usize..64), 1..10)) {
        let g = build_blocks(&steps);
        let off = CompileOptions::default().optimize(false);
        let reference = run_blocks(&g, &off);
        let none = rlx_compile::FusionOptions::disabled();
        let alone = |f: fn(&mut rlx_compile::FusionOptions)| {
            let mut o = off.clone();
            let mut fo = none.clone();
            f(&mut fo);
            o.lower.fusion = fo;
            o
        };
        let exact = [
            ("add_norm", alone(|f| f.add_norm = true)),
            ("gated_matmul", alone(|f| f.gated_matmul = true)),
            ("shared_input", alone(|f| f.shared_input = true)),
            ("transposed_operands", alone(|f| f.transposed_operands = true)),
        ];
        for (name, opts) in exact {
            let out = run_blocks(&g, &opts);
            prop_assert!(same_bits(&reference, &out), "{name} changed the results of\n{g}\n{reference:?}\nvs\n{out:?}");
        }
        for (name, opts) in [
            ("attention", alone(|f| f.attention = true)),
            ("gelu", alone(|f| f.gelu = true)),
            ("all", CompileOptions::default()),
        ] {
            let out = run_blocks(&g, &opts);
            prop_assert!(within(&reference, &out, 1e-5), "{name} changed the results of\n{g}\n{reference:?}\nvs\n{out:?}");
        }
    }
}

#[test]
fn every_pattern_fuses_in_a_planted_program() {
    // One of each pattern step; the report must show each fusion kind.
    let steps: Vec<Step> = vec![
        (0, 0, 1),
        (1, 2, 1),
        (2, 0, 0),
        (3, 1, 1),
        (4, 0, 0),
        (4, 1, 1),
        (5, 0, 0),
        (6, 2, 0),
        (7, 3, 4),
        (8, 0, 1),
        (9, 1, 0),
        (9, 0, 1),
        (10, 2, 0),
    ];
    let mut g = build_blocks(&steps);
    // Every value no step reads is an output, so no pattern is dead code.
    let mut read = vec![false; g.len()];
    for n in g.nodes() {
        n.inputs.iter().for_each(|i| read[i.index()] = true);
    }
    let sinks = g
        .ids()
        .filter(|&i| !read[i.index()] && !g.node(i).op.is_leaf())
        .collect();
    g.set_outputs(sinks);
    let c = Session::new(Device::Cpu).compile(g.clone());
    let report = &c.lir().fusion;
    use rlx_compile::FusionKind::*;
    for kind in [AddNorm, GatedMatMul, Attention, SharedInput, Gelu] {
        assert!(
            !report.of_kind(kind).is_empty(),
            "no {kind:?}:\n{report}\n{g}"
        );
    }
    assert!(report.missed.is_empty(), "{report}");
    let off = CompileOptions::default().optimize(false);
    assert!(within(
        &run_blocks(&g, &off),
        &run_blocks(&g, &CompileOptions::default()),
        1e-5
    ));
}

#[test]
fn transposed_operands_read_in_place_are_bit_exact() {
    // x.T @ y and y @ w.T (reverse mode's weight / input gradients), of
    // sizes past the GEMM's small-matrix paths, with and without the rewrite.
    use rlx_ir::{DType, GraphExt, Shape};
    let mut g = Graph::new("transposed");
    let x = g.input("x", Shape::new(&[37, 70], DType::F32));
    let y = g.input("y", Shape::new(&[37, 45], DType::F32));
    let w = g.input("w", Shape::new(&[29, 45], DType::F32));
    let xt = g.transpose_(x, &[1, 0]);
    let dw = g.mm(xt, y);
    let wt = g.transpose_(w, &[1, 0]);
    let dx = g.mm(y, wt);
    g.set_outputs(vec![dw, dx]);
    let (xv, yv, wv) = (
        values(37 * 70, 1, 1.0),
        values(37 * 45, 2, 1.0),
        values(29 * 45, 3, 1.0),
    );
    let run = |opts: &CompileOptions| {
        let mut c = Session::new(Device::Cpu)
            .try_compile_with(g.clone(), opts)
            .unwrap();
        let kinds: Vec<String> = c
            .lir()
            .graph
            .nodes()
            .iter()
            .map(|n| n.op.mnemonic())
            .collect();
        (c.run(&[("x", &xv), ("y", &yv), ("w", &wv)]), kinds)
    };
    let mut fusion = rlx_compile::FusionOptions::disabled();
    fusion.transposed_operands = true;
    let off = CompileOptions::default()
        .optimize(false)
        .hoist_params(false);
    let (plain, plain_kinds) = run(&off);
    let (fused, kinds) = run(&off.clone().fusion_options(fusion));
    assert!(plain_kinds.iter().any(|k| k.starts_with("transpose")));
    assert!(
        !kinds
            .iter()
            .any(|k| k.starts_with("transpose") || k == "matmul"),
        "{kinds:?}"
    );
    assert!(same_bits(&plain, &fused));
}

#[test]
fn few_row_products_read_in_place_are_bit_exact() {
    // A decode step's shapes: 2 to 4 rows (the small-row kernel) against a
    // transposed operand read in place, and a transposed lhs, with and
    // without the rewrite.
    use rlx_ir::{DType, GraphExt, Shape};
    for m in 2..=4 {
        let mut g = Graph::new("few_rows");
        let q = g.input("q", Shape::new(&[m, 64], DType::F32));
        let k = g.input("k", Shape::new(&[203, 64], DType::F32));
        let p = g.input("p", Shape::new(&[203, m], DType::F32));
        let kt = g.transpose_(k, &[1, 0]);
        let scores = g.mm(q, kt);
        let pt = g.transpose_(p, &[1, 0]);
        let out = g.mm(pt, k);
        g.set_outputs(vec![scores, out]);
        let (qv, kv, pv) = (
            values(m * 64, 4, 1.0),
            values(203 * 64, 5, 1.0),
            values(203 * m, 6, 1.0),
        );
        let run = |opts: &CompileOptions| {
            let mut c = Session::new(Device::Cpu)
                .try_compile_with(g.clone(), opts)
                .unwrap();
            c.run(&[("q", &qv), ("k", &kv), ("p", &pv)])
        };
        let mut fusion = rlx_compile::FusionOptions::disabled();
        fusion.transposed_operands = true;
        let off = CompileOptions::default()
            .optimize(false)
            .hoist_params(false);
        let plain = run(&off);
        let fused = run(&off.clone().fusion_options(fusion));
        assert!(same_bits(&plain, &fused), "{m} rows");
    }
}

#[test]
fn a_transposed_param_is_hoisted_not_read_through_strides() {
    // The runtime transposes a param once per value (the param prelude),
    // and the main graph's matmul reads a plain weight it can pack.
    use rlx_ir::{DType, GraphExt, Shape};
    let mut g = Graph::new("transposed_param");
    let y = g.input("y", Shape::new(&[37, 45], DType::F32));
    let w = g.param("w", Shape::new(&[29, 45], DType::F32));
    let wt = g.transpose_(w, &[1, 0]);
    let dx = g.mm(y, wt);
    g.set_outputs(vec![dx]);
    let (yv, wv) = (values(37 * 45, 2, 1.0), values(29 * 45, 3, 1.0));
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    c.set_param("w", &wv);
    let kinds: Vec<String> = c
        .lir()
        .graph
        .nodes()
        .iter()
        .map(|n| n.op.mnemonic())
        .collect();
    assert!(kinds.iter().any(|k| k == "matmul"), "{kinds:?}");
    assert!(
        !kinds.iter().any(|k| k.starts_with("dot_general")),
        "{kinds:?}"
    );
    let got = &c.run(&[("y", &yv)])[0];
    for i in 0..37 {
        for j in 0..29 {
            let want: f64 = (0..45)
                .map(|q| yv[i * 45 + q] as f64 * wv[j * 45 + q] as f64)
                .sum();
            assert!((got[i * 29 + j] as f64 - want).abs() < 1e-4, "[{i},{j}]");
        }
    }
}
