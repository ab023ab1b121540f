//! Golden textual-IR tests: input graph, pass, expected graph text.

use rlx_compile::passes::{dce::dce, decompose::decompose_unclaimed, precision::lower_precision};
use rlx_ir::{inspect_graph_diff, parse_graph, DType, Graph, GraphExt, Shape};

/// The graph's text, after checking that it parses back to a graph that
/// prints the same (every golden text is also a parser test).
fn text_of(g: &Graph) -> String {
    let text = g.to_string();
    let back = parse_graph(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back.to_string(), text);
    text
}

fn softmax_graph() -> Graph {
    let mut g = Graph::new("probs");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let p = g.sm(x, -1);
    g.set_outputs(vec![p]);
    g
}

#[test]
fn textual_ir_of_a_softmax() {
    assert_eq!(
        text_of(&softmax_graph()),
        "graph \"probs\" {\n  %0 = input \"x\" : f32[2,3]\n  %1 = softmax{axis=1} %0 : f32[2,3]\n  return %1\n}"
    );
}

#[test]
fn decompose_softmax_into_primitives() {
    let out = decompose_unclaimed(&softmax_graph(), &|_| false).unwrap();
    let want = "graph \"probs\" {
  %0 = input \"x\" : f32[2,3]
  %1 = reduce.max{axes=[1], keep_dim=true} %0 : f32[2,1]
  %2 = sub %0, %1 : f32[2,3]
  %3 = exp %2 : f32[2,3]
  %4 = reduce.sum{axes=[1], keep_dim=true} %3 : f32[2,1]
  %5 = div %3, %4 : f32[2,3]
  return %5
}";
    assert_eq!(text_of(&out), want);
    assert!(rlx_ir::verify_all(&out).is_empty());
}

#[test]
fn dce_drops_what_no_output_reads() {
    let mut g = Graph::new("dead");
    let x = g.input("x", Shape::new(&[4], DType::F32));
    let _unused = g.exp(x);
    let y = g.neg(x);
    g.set_outputs(vec![y]);
    let out = dce(&g).unwrap();
    assert_eq!(
        text_of(&out),
        "graph \"dead\" {\n  %0 = input \"x\" : f32[4]\n  %1 = neg %0 : f32[4]\n  return %1\n}"
    );
    let diff = inspect_graph_diff(&g, &out);
    assert!(diff.contains("- exp : f32[4] (1 inputs)"), "{diff}");
}

#[test]
fn precision_casts_only_at_the_boundary() {
    let mut g = Graph::new("half");
    let x = g.input("x", Shape::new(&[4], DType::F32));
    let y = g.exp(x);
    let z = g.mul(y, g.constant(2.0, DType::F32));
    g.set_outputs(vec![z]);
    let out = lower_precision(&g, DType::F16).unwrap();
    let want = "graph \"half\" {
  %0 = input \"x\" : f32[4]
  %1 = cast %0 : f16[4]
  %2 = exp %1 : f16[4]
  %3 = constant [2] : f32[]
  %4 = cast %3 : f16[]
  %5 = mul %2, %4 : f16[4]
  %6 = cast %5 : f32[4]
  return %6
}";
    assert_eq!(text_of(&out), want);
}

#[test]
fn cse_merges_equal_values_and_equal_constants() {
    let mut g = Graph::new("twice");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let a = g.exp(x);
    let b = g.exp(x);
    let s = g.add(a, b);
    let p = g.mul(s, g.constant(3.0, DType::F32));
    let q = g.mul(s, g.constant(3.0, DType::F32));
    g.set_outputs(vec![p, q]);
    let out = rlx_compile::passes::dce::dce(&rlx_compile::passes::cse::cse(&g).unwrap()).unwrap();
    assert_eq!(
        text_of(&out),
        "graph \"twice\" {
  %0 = input \"x\" : f32[2]
  %1 = exp %0 : f32[2]
  %2 = add %1, %1 : f32[2]
  %3 = constant [3] : f32[]
  %4 = mul %2, %3 : f32[2]
  return %4, %4
}"
    );
}

#[test]
fn simplify_removes_identities_and_collapses_chains() {
    use rlx_compile::passes::simplify::simplify;
    let mut g = Graph::new("ids");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let a = g.add(x, 0.0);
    let a = g.mul(a, 1.0);
    let a = g.div(a, 1.0);
    let n = g.neg(a);
    let n = g.neg(n);
    let t = g.transpose_(n, &[1, 0]);
    let t = g.transpose_(t, &[1, 0]);
    let r = g.reshape_(t, &[3, 2]);
    let r = g.reshape_(r, &[6]);
    let w = g.cast(r, DType::F64);
    let back = g.cast(w, DType::F32);
    let h = g.cast(back, DType::F16); // lossy: kept
    let h = g.cast(h, DType::F32);
    let z = g.mul(h, 0.0); // x * 0 is not 0 for NaN / inf: kept
    g.set_outputs(vec![z]);
    let out = rlx_compile::passes::dce::dce(&simplify(&g).unwrap()).unwrap();
    assert_eq!(
        text_of(&out),
        "graph \"ids\" {
  %0 = input \"x\" : f32[2,3]
  %1 = reshape %0 : f32[6]
  %2 = cast %1 : f16[6]
  %3 = cast %2 : f32[6]
  %4 = constant [0] : f32[]
  %5 = mul %3, %4 : f32[6]
  return %5
}"
    );
}

#[test]
fn simplify_keeps_a_broadcasting_identity() {
    // x[3] + zeros[2,3] broadcasts: the result is not x.
    let mut g = Graph::new("bcast");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let zeros = g.constant_tensor(&rlx_ir::HostTensor::zeros(DType::F32, &[2, 3]));
    let y = g.add(x, zeros);
    g.set_outputs(vec![y]);
    let out = rlx_compile::passes::simplify::simplify(&g).unwrap();
    assert_eq!(out.len(), g.len());
}

#[test]
fn fold_replaces_constant_subgraphs_through_the_evaluator() {
    use rlx_compile::{passes::fold::fold_constants, ConstEvaluator, FoldOptions};
    use rlx_ir::HostTensor;
    /// Evaluates exactly the one graph shape this test folds: c0 + c1 (f64 on the host).
    struct AddEvaluator;
    impl ConstEvaluator for AddEvaluator {
        fn evaluate(&self, g: &Graph) -> Result<Vec<HostTensor>, rlx_compile::ConstEvalError> {
            let vals: Vec<Vec<f64>> = g
                .nodes()
                .iter()
                .filter_map(|n| match &n.op {
                    rlx_ir::Op::Constant { bytes } => Some(
                        HostTensor::from_bytes(
                            n.shape.dtype(),
                            &n.shape.static_dims()?,
                            bytes.to_vec(),
                        )
                        .ok()?
                        .to_f64_lossy(),
                    ),
                    _ => None,
                })
                .collect();
            let sum: Vec<f32> = vals[0]
                .iter()
                .zip(&vals[1])
                .map(|(a, b)| (a + b) as f32)
                .collect();
            Ok(vec![HostTensor::from_vec(sum, &[2]).unwrap()])
        }
    }
    let mut g = Graph::new("fold");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let c0 = g.constant_tensor(&HostTensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    let c1 = g.constant_tensor(&HostTensor::from_vec(vec![10.0f32, 20.0], &[2]).unwrap());
    let c = g.add(c0, c1);
    let y = g.mul(x, c);
    g.set_outputs(vec![y]);
    let out = fold_constants(&g, &AddEvaluator, FoldOptions::default()).unwrap();
    let out = rlx_compile::passes::dce::dce(&out).unwrap();
    assert_eq!(
        text_of(&out),
        "graph \"fold\" {
  %0 = input \"x\" : f32[2]
  %1 = constant [11, 22] : f32[2]
  %2 = mul %0, %1 : f32[2]
  return %2
}"
    );
    // Too large to fold: left alone.
    let tiny = FoldOptions { max_bytes: 4 };
    assert_eq!(fold_constants(&g, &AddEvaluator, tiny).unwrap(), g);
}

#[test]
fn pipeline_records_each_pass() {
    let mut g = Graph::new("rec");
    let x = g.input("x", Shape::new(&[4], DType::F32));
    let a = g.add(x, 0.0);
    let _dead = g.exp(a);
    g.set_outputs(vec![a]);
    let r = rlx_compile::CompilePipeline::new()
        .keep_stages(true)
        .with_fn("simplify", rlx_compile::passes::simplify::simplify)
        .with_fn("dce", dce)
        .run(&g)
        .unwrap();
    let counts: Vec<(String, usize, usize)> = r
        .records
        .iter()
        .map(|p| (p.pass.clone(), p.nodes_before, p.nodes_after))
        .collect();
    assert_eq!(
        counts,
        vec![("simplify".into(), 4, 3), ("dce".into(), 3, 1)]
    );
    assert_eq!(r.records[1].graph.as_ref().unwrap(), &r.graph);
    assert!(r.report().contains("simplify"), "{}", r.report());
}
