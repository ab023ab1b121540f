//! Layout legalisation (`rlx_compile::legalize_layout`): on a target that
//! claims neither native broadcasting nor strided inputs, every elementwise
//! op sees operands of its own dims, every strided value (transpose,
//! broadcast, strided slice) is copied before a non-layout op reads it, the
//! graph verifies, and the results are bit-identical to the original's, on
//! random broadcasting programs. On the CPU target the pass is a no-op.

use proptest::prelude::*;
use rlx_compile::{legalize_layout, lower, LayoutClaims, LowerOptions};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, NodeId, Op, Shape};

mod common;
#[path = "common/random_graphs.rs"]
mod random_graphs;
use random_graphs::{broadcastable, run_unoptimised as run, same_bits};

/// Inputs of mutually broadcastable shapes.
const SHAPES: [&[usize]; 5] = [&[4, 1, 3], &[2, 3], &[3], &[], &[4, 2, 1]];

/// A random program of broadcasting elementwise ops, transposes, strided
/// slices, reshapes of transposes and matmuls of transposed operands.
fn build(steps: &[(u8, usize, usize)]) -> Graph {
    let mut g = Graph::new("bcast");
    let mut pool: Vec<NodeId> = SHAPES
        .iter()
        .enumerate()
        .map(|(i, s)| g.input(&format!("x{i}"), Shape::new(s, DType::F32)))
        .collect();
    for &(op, i, j) in steps {
        let x = pool[i % pool.len()];
        let y = pool[j % pool.len()];
        let y = if broadcastable(&g, x, y) { y } else { x };
        let rank = g.shape(x).rank();
        let z = match op % 10 {
            0 => g.add(x, y),
            1 => g.sub(x, y),
            2 => g.mul(x, y),
            3 => g.maximum(x, y),
            4 => {
                let c = g.lt(x, y);
                let t = g.tanh(y);
                g.where_(c, x, t)
            }
            5 if rank >= 2 => {
                let perm: Vec<usize> = (0..rank).rev().collect();
                let t = g.transpose_(x, &perm);
                g.exp(t)
            }
            6 if rank >= 1 => {
                let t = if rank == 2 {
                    g.transpose_(x, &[1, 0])
                } else {
                    x
                };
                g.reshape_(t, &[-1])
            }
            7 if rank == 2 => {
                let t = g.transpose_(x, &[1, 0]);
                let w = g.mul(t, 0.5);
                g.mm(x, w)
            }
            8 if rank >= 1 && g.shape(x).dim(rank - 1).unwrap() >= 2 => {
                // x[..., ::-1]: a strided (reversed) slice
                let s = g.slice_(x, -1, -1, i64::MIN, -1);
                g.add(s, 0.25)
            }
            _ => g.add(x, 1.0),
        };
        pool.push(z);
    }
    let n = pool.len();
    g.set_outputs(vec![pool[n / 2], pool[n - 1]]);
    g
}

fn is_strided(g: &Graph, id: NodeId) -> bool {
    let n = g.node(id);
    match &n.op {
        Op::Transpose { perm } => perm.iter().enumerate().any(|(i, &p)| i != p),
        Op::Broadcast => true,
        Op::Slice(s) => s.steps.iter().any(|&st| st != 1),
        _ => false,
    }
}

/// The invariants the pass promises for a target claiming neither.
fn check_legal(g: &Graph) {
    assert!(rlx_ir::verify_all(g).is_empty(), "{g}");
    for id in g.ids() {
        let n = g.node(id);
        if matches!(
            n.op,
            Op::Binary(_) | Op::Compare(_) | Op::Select | Op::ElementwiseRegion { .. }
        ) {
            for &i in &n.inputs {
                assert_eq!(
                    g.shape(i).dims(),
                    n.shape.dims(),
                    "{id} reads {i} unbroadcast\n{g}"
                );
            }
        }
        let layout = matches!(n.op, Op::Transpose { .. } | Op::Broadcast)
            || matches!(n.op, Op::Slice(_)) && is_strided(g, id);
        if !layout {
            for &i in &n.inputs {
                assert!(!is_strided(g, i), "{id} reads strided {i}\n{g}");
            }
        }
    }
    for &o in g.outputs() {
        assert!(!is_strided(g, o), "output {o} is strided\n{g}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn legalised_broadcasting_programs_compute_the_same(steps in prop::collection::vec((0u8..10, 0usize..64, 0usize..64), 1..14)) {
        let g = build(&steps);
        let legal = legalize_layout(&g, LayoutClaims::NONE).unwrap();
        check_legal(&legal);
        prop_assert!(same_bits(&run(&g), &run(&legal)), "{g}\n{legal}");
    }

    #[test]
    fn legalised_pass_equivalence_programs_compute_the_same(steps in prop::collection::vec((0u8..16, 0usize..64, 0usize..64), 1..14)) {
        let g = random_graphs::build(&steps);
        for claims in [LayoutClaims::NONE, LayoutClaims { broadcast: false, strided_inputs: true }, LayoutClaims { broadcast: true, strided_inputs: false }] {
            let legal = legalize_layout(&g, claims).unwrap();
            prop_assert!(rlx_ir::verify_all(&legal).is_empty());
            if claims == LayoutClaims::NONE {
                check_legal(&legal);
            }
            prop_assert!(same_bits(&run(&g), &run(&legal)), "{claims:?}\n{g}\n{legal}");
        }
    }
}

#[test]
fn the_cpu_target_claims_both_and_is_left_alone() {
    let target = rlx_runtime::fusion_target(Device::Cpu).unwrap();
    assert_eq!(target.layout(), LayoutClaims::NATIVE);
    let g = build(&[(0, 0, 1), (5, 0, 0), (7, 1, 1), (8, 2, 2)]);
    assert_eq!(legalize_layout(&g, target.layout()).unwrap(), g);
}

#[test]
fn the_lowering_pipeline_legalises_for_a_target_without_the_claims() {
    let g = build(&[
        (0, 0, 1),
        (4, 1, 2),
        (5, 0, 0),
        (6, 1, 1),
        (7, 1, 1),
        (8, 2, 2),
    ]);
    let opts = LowerOptions {
        layout: LayoutClaims::NONE,
        keep_dead_code: true,
        ..LowerOptions::default()
    };
    let lir = lower(&g, &|op| !op.kind().is_composite(), &opts).unwrap();
    assert_eq!(lir.passes.last().unwrap().pass, "legalize_layout");
    check_legal(&lir.graph);
    let native = lower(
        &g,
        &|op| !op.kind().is_composite(),
        &LowerOptions::default(),
    )
    .unwrap();
    assert!(native.passes.iter().all(|p| p.pass != "legalize_layout"));
    // Explicit broadcasts appear where the input broadcast implicitly.
    let count = |g: &Graph, f: fn(&Op) -> bool| g.nodes().iter().filter(|n| f(&n.op)).count();
    let is_copy =
        |op: &Op| matches!(op, Op::Transpose { perm } if perm.windows(2).all(|w| w[0] < w[1]));
    assert!(
        count(&lir.graph, |op| matches!(op, Op::Broadcast)) >= 2,
        "{}",
        lir.graph
    );
    // The transposes feeding exp / reshape / matmul and the reversed slice get copies.
    assert!(count(&lir.graph, is_copy) >= 6, "{}", lir.graph);
}

/// A backend that runs on the CPU kernels but claims no layout freedom, so
/// a session compiling for it must legalise.
struct NoLayoutBackend;

impl rlx_driver::Backend for NoLayoutBackend {
    fn device(&self) -> Device {
        Device::Gpu
    }
    fn name(&self) -> &'static str {
        "no-layout"
    }
    fn claims(&self, op: &Op) -> bool {
        rlx_cpu::CpuBackend.claims(op)
    }
    fn layout(&self) -> LayoutClaims {
        LayoutClaims::NONE
    }
    fn compile(
        &self,
        lir: rlx_compile::LirModule,
    ) -> Result<Box<dyn rlx_driver::Executable>, rlx_driver::BackendError> {
        rlx_cpu::CpuBackend.compile(lir)
    }
}

/// The op kinds of a compiled graph's LIR.
fn kinds_of(c: &rlx_runtime::CompiledGraph) -> Vec<rlx_ir::OpKind> {
    c.lir().graph.nodes().iter().map(|n| n.op.kind()).collect()
}

#[test]
fn a_session_legalises_for_a_backend_without_layout_claims() {
    rlx_driver::registry::register_backend(std::sync::Arc::new(NoLayoutBackend));
    let mut g = Graph::new("bias_row");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let b = g.input("b", Shape::new(&[3], DType::F32));
    let y = g.add(x, b);
    g.set_outputs(vec![y]);

    let target = rlx_runtime::fusion_target(Device::Gpu).unwrap();
    assert_eq!(target.layout(), LayoutClaims::NONE);
    let mut compiled = rlx_runtime::Session::new(Device::Gpu).compile(g.clone());
    let kinds = kinds_of(&compiled);
    assert!(
        kinds.contains(&rlx_ir::OpKind::Broadcast),
        "the bias is broadcast explicitly: {kinds:?}"
    );
    let out = compiled.run(&[
        ("x", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        ("b", &[10.0, 20.0, 30.0]),
    ]);
    assert_eq!(out, vec![vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]]);

    let mut on_cpu = rlx_runtime::Session::new(Device::Cpu).compile(g);
    let cpu_kinds = kinds_of(&on_cpu);
    assert!(
        !cpu_kinds.contains(&rlx_ir::OpKind::Broadcast),
        "{cpu_kinds:?}"
    );
    let _ = on_cpu.run(&[("x", &[0.0; 6]), ("b", &[0.0; 3])]);
}
