//! Fused matmuls and elementwise regions in CUDA plans, run by the host
//! interpreter against the CPU backend: a bias per column alone or under a
//! ReLU / tanh GELU is one cuBLASLt step (`GemmBias`); any other epilogue
//! and every region run as their steps' kernels with scratch past the
//! memory plan's arena (checked by the byte-tag simulation).

mod common;

use common::graphs::rand;
use common::plan_check::assert_plan_matches_cpu;
use rlx_cuda::plan::{Epilogue, Kernel, LaunchPlan};
use rlx_ir::op::UnaryOp;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};

fn gemm_bias(p: &LaunchPlan) -> Vec<Epilogue> {
    p.steps
        .iter()
        .filter_map(|s| match s.kernel {
            Kernel::GemmBias { epilogue, .. } => Some(epilogue),
            _ => None,
        })
        .collect()
}

/// `act(x @ w + b)` over `x [batch.., 4, 6]`, `w [6, 5]`, `b` of `bias_dims`.
fn dense(batch: &[usize], bias_dims: &[usize], act: Option<UnaryOp>) -> (Graph, Vec<HostTensor>) {
    let mut g = Graph::new("dense");
    let xd: Vec<usize> = batch.iter().copied().chain([4, 6]).collect();
    let x = g.input("x", Shape::new(&xd, DType::F32));
    let w = g.param("w", Shape::new(&[6, 5], DType::F32));
    let b = g.param("b", Shape::new(bias_dims, DType::F32));
    let y = g.mm(x, w);
    let mut y = g.add(y, b);
    if let Some(a) = act {
        y = g.unary(a, y);
    }
    g.set_outputs(vec![y]);
    let vals = vec![
        rand(&xd, -2.0, 2.0, 1),
        rand(&[6, 5], -1.0, 1.0, 2),
        rand(bias_dims, -1.0, 1.0, 3),
    ];
    (g, vals)
}

fn check(g: &Graph, vals: &[HostTensor]) -> LaunchPlan {
    let p = assert_plan_matches_cpu(
        g,
        &[("w", &vals[1]), ("b", &vals[2])],
        &[("x", &vals[0])],
        1e-5,
    );
    p.check().unwrap();
    p
}

#[test]
fn bias_relu_and_tanh_gelu_epilogues_are_one_lt_step() {
    let cases = [
        (None, Epilogue::Bias),
        (Some(UnaryOp::Relu), Epilogue::BiasRelu),
        (Some(UnaryOp::GeluApprox), Epilogue::BiasGeluTanh),
    ];
    for batch in [&[][..], &[3][..]] {
        for (act, want) in cases {
            let (g, vals) = dense(batch, &[5], act);
            let p = check(&g, &vals);
            assert_eq!(gemm_bias(&p), vec![want], "{batch:?} {act:?}: {p}");
            assert_eq!(p.steps.len(), 1, "{p}");
        }
    }
}

#[test]
fn other_epilogues_run_as_the_gemm_and_their_kernels() {
    // Exact (erf) GELU: cuBLASLt's GELU is the tanh one.
    let (g, vals) = dense(&[], &[5], Some(UnaryOp::Gelu));
    let p = check(&g, &vals);
    assert!(gemm_bias(&p).is_empty(), "{p}");
    assert!(
        p.steps.iter().any(|s| matches!(s.kernel, Kernel::Gemm(_))),
        "{p}"
    );
    // A bias per row is no per-column bias.
    let (g, vals) = dense(&[], &[4, 1], Some(UnaryOp::Relu));
    let p = check(&g, &vals);
    assert!(gemm_bias(&p).is_empty(), "{p}");

    // x·sigmoid(x) spelled out over the product (reads the product twice:
    // needs scratch) plus a scaled residual.
    let mut g = Graph::new("silu_residual");
    let x = g.input("x", Shape::new(&[4, 6], DType::F32));
    let w = g.param("w", Shape::new(&[6, 5], DType::F32));
    let r = g.param("b", Shape::new(&[4, 5], DType::F32));
    let y = g.mm(x, w);
    let s = g.sigmoid(y);
    let z = g.mul(y, s);
    let half = g.constant(0.5, DType::F32);
    let z = g.mul(z, half);
    let z = g.add(z, r);
    g.set_outputs(vec![z]);
    let vals = vec![
        rand(&[4, 6], -2.0, 2.0, 4),
        rand(&[6, 5], -1.0, 1.0, 5),
        rand(&[4, 5], -1.0, 1.0, 6),
    ];
    let p = check(&g, &vals);
    assert!(p.steps.len() >= 4, "{p}");
}

#[test]
fn elementwise_regions_run_as_their_steps() {
    let mut g = Graph::new("region");
    let a = g.input("x", Shape::new(&[3, 4], DType::F32));
    let w: NodeId = g.param("w", Shape::new(&[4], DType::F32));
    let b: NodeId = g.param("b", Shape::new(&[3, 1], DType::F32));
    let t = g.mul(a, w);
    let t = g.tanh(t);
    let u = g.add(t, b);
    let v = g.mul(u, t);
    let c = g.sub(v, u);
    g.set_outputs(vec![c, u]);
    let vals = [
        rand(&[3, 4], -2.0, 2.0, 7),
        rand(&[4], -1.0, 1.0, 8),
        rand(&[3, 1], -1.0, 1.0, 9),
    ];
    let p = assert_plan_matches_cpu(
        &g,
        &[("w", &vals[1]), ("b", &vals[2])],
        &[("x", &vals[0])],
        1e-3,
    );
    p.check().unwrap();
}
