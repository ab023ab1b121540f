//! Golden textual-IR tests: input graph, pass, expected graph text.

use rlx_compile::passes::{dce::dce, decompose::decompose_unclaimed, precision::lower_precision};
use rlx_ir::{inspect_graph_diff, DType, Graph, GraphExt, Shape};

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
        softmax_graph().to_string(),
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
    assert_eq!(out.to_string(), want);
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
        out.to_string(),
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
    assert_eq!(out.to_string(), want);
}
