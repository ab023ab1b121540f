//! `CompileOptions::fusion_policy`: what each `FusionPolicy` fuses in a
//! SwiGLU block with a bias tail, and that every policy computes the same
//! numbers as an f64 host reference.

use rlx_driver::Device;
use rlx_ir::{DType, FusionPolicy, Graph, GraphExt, OpKind, Shape};
use rlx_runtime::{graph_param_names, CompileOptions, Session};
use std::collections::BTreeSet;

const M: usize = 5;
const K: usize = 8;
const N: usize = 6;

/// `(silu(x @ wg) * (x @ wu) + b) * 0.5`.
fn swiglu() -> Graph {
    let mut g = Graph::new("swiglu");
    let x = g.input("x", Shape::new(&[M, K], DType::F32));
    let wg = g.param("wg", Shape::new(&[K, N], DType::F32));
    let wu = g.param("wu", Shape::new(&[K, N], DType::F32));
    let b = g.param("b", Shape::new(&[N], DType::F32));
    let gate = g.mm(x, wg);
    let gate = g.silu(gate);
    let up = g.mm(x, wu);
    let h = g.mul(gate, up);
    let h = g.add(h, b);
    let y = g.mul(h, 0.5);
    g.set_outputs(vec![y]);
    g
}

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7 + seed * 13) % 23) as f32 - 11.0) / 9.0)
        .collect()
}

fn reference(x: &[f32], wg: &[f32], wu: &[f32], b: &[f32]) -> Vec<f64> {
    let mut y = vec![0.0; M * N];
    for i in 0..M {
        for j in 0..N {
            let dot = |w: &[f32]| -> f64 {
                (0..K)
                    .map(|p| x[i * K + p] as f64 * w[p * N + j] as f64)
                    .sum()
            };
            let (gt, u) = (dot(wg), dot(wu));
            y[i * N + j] = (gt / (1.0 + (-gt).exp()) * u + b[j] as f64) * 0.5;
        }
    }
    y
}

fn fused_kinds(policy: FusionPolicy) -> (BTreeSet<OpKind>, Vec<f32>) {
    let opts = CompileOptions::default().fusion_policy(policy);
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(swiglu(), &opts)
        .unwrap();
    let kinds = c.lir().graph.nodes().iter().map(|n| n.op.kind()).collect();
    let (x, wg, wu, b) = (
        values(M * K, 1),
        values(K * N, 2),
        values(K * N, 3),
        values(N, 4),
    );
    c.set_param("wg", &wg);
    c.set_param("wu", &wu);
    c.set_param("b", &b);
    let out = c.run(&[("x", &x)]).remove(0);
    let want = reference(&x, &wg, &wu, &b);
    for (i, (&got, &w)) in out.iter().zip(&want).enumerate() {
        assert!(
            (got as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{policy}: {i}: {got} vs {w}"
        );
    }
    (kinds, out)
}

#[test]
fn full_rewrites_patterns_loops_only_fuses_loops_off_fuses_nothing() {
    let fused = [
        OpKind::GatedMatMul,
        OpKind::FusedMatMul,
        OpKind::ElementwiseRegion,
    ];
    let (full, _) = fused_kinds(FusionPolicy::Full);
    assert!(full.contains(&OpKind::GatedMatMul), "full: {full:?}");

    let (loops, _) = fused_kinds(FusionPolicy::LoopsOnly);
    assert!(
        !loops.contains(&OpKind::GatedMatMul),
        "loops-only: {loops:?}"
    );
    assert!(
        loops.contains(&OpKind::FusedMatMul) || loops.contains(&OpKind::ElementwiseRegion),
        "loops-only fused no loop: {loops:?}"
    );
    assert!(loops.contains(&OpKind::MatMul) || loops.contains(&OpKind::FusedMatMul));

    let (off, _) = fused_kinds(FusionPolicy::Off);
    assert!(fused.iter().all(|k| !off.contains(k)), "off: {off:?}");
    // `.fusion(false)` is the same as `FusionPolicy::Off`.
    let a = CompileOptions::default().fusion(false);
    let b = CompileOptions::default().fusion_policy(FusionPolicy::Off);
    assert_eq!(a.lower.fusion, b.lower.fusion);
}

#[test]
fn graph_param_names_lists_params_in_declaration_order() {
    assert_eq!(graph_param_names(&swiglu()), ["wg", "wu", "b"]);
}
