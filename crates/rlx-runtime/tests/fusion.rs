//! Elementwise-region fusion on the CPU backend: what fuses, what does not
//! (with the reason), the memory it saves, and numbers against a host
//! reference computed independently in f64.

use rlx_compile::MissReason;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Op, Shape};
use rlx_runtime::{CompileOptions, Session};

/// gelu-ish chain over x[R, C] with a row bias b[C] and a scalar: 3000+
/// elements so the kernel crosses several tiles and ends on a partial one.
fn chain(dtype: DType) -> Graph {
    let (r, c) = (61, 53);
    let mut g = Graph::new("chain");
    let x = g.input("x", Shape::new(&[r, c], dtype));
    let b = g.input("b", Shape::new(&[c], dtype));
    let t = g.add(x, b);
    let u = g.mul(t, 0.5);
    let v = g.tanh(u);
    let w = g.add(v, 1.0);
    let y = g.mul(w, t);
    g.set_outputs(vec![y]);
    g
}

fn data() -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = (0..61 * 53)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
        .collect();
    let b: Vec<f32> = (0..53).map(|i| (i as f32 - 26.0) / 13.0).collect();
    (x, b)
}

#[test]
fn a_chain_fuses_into_one_region_and_matches_f64() {
    let (x, b) = data();
    let mut c = Session::new(Device::Cpu).compile(chain(DType::F32));
    let lir = c.lir().clone();
    let regions: Vec<_> = lir
        .graph
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::ElementwiseRegion { .. }))
        .collect();
    assert_eq!(regions.len(), 1, "{}", lir.graph);
    assert_eq!(lir.fusion.regions.len(), 1);
    assert_eq!(lir.fusion.regions[0].nodes.len(), 5);
    let out = c.run(&[("x", &x), ("b", &b)]);
    for (i, &got) in out[0].iter().enumerate() {
        let t = x[i] as f64 + b[i % 53] as f64;
        let want = ((t * 0.5).tanh() + 1.0) * t;
        assert!(
            (got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "{i}: {got} vs {want}"
        );
    }
}

#[test]
fn fusion_saves_nodes_and_arena_bytes() {
    let fused = Session::new(Device::Cpu).compile(chain(DType::F32));
    let unfused = Session::new(Device::Cpu)
        .compile_with(chain(DType::F32), &CompileOptions::default().fusion(false));
    let (f, u) = (fused.lir(), unfused.lir());
    assert_eq!(u.graph.len() - f.graph.len(), 4);
    // Unfused (and planned without in-place reuse), a chain needs two live
    // [61, 53] f32 buffers beyond the inputs; fused, only the output, which
    // in-place reuse then writes over the dying input.
    let buffer = 61 * 53 * 4;
    let u_arena = rlx_compile::plan_memory_with(&u.graph, 64, false)
        .unwrap()
        .arena_bytes;
    assert!(
        u_arena >= f.plan.arena_bytes + buffer,
        "arena {u_arena} (unfused) vs {} (fused)",
        f.plan.arena_bytes
    );
    // In-place reuse alone already saves one buffer of the unfused chain.
    assert!(
        u.plan.arena_bytes + buffer <= u_arena,
        "{} vs {u_arena}",
        u.plan.arena_bytes
    );
}

#[test]
fn fused_half_precision_equals_unfused_bit_for_bit() {
    let (x, b) = data();
    let to = |v: &[f32], dims: &[usize]| {
        HostTensor::from_vec(v.iter().map(|&a| rlx_ir::f16::from_f32(a)).collect(), dims).unwrap()
    };
    let (tx, tb) = (to(&x, &[61, 53]), to(&b, &[53]));
    let run = |opts: &CompileOptions| {
        let mut c = Session::new(Device::Cpu).compile_with(chain(DType::F16), opts);
        c.run_typed(&[("x", &tx), ("b", &tb)])
    };
    let fused = run(&CompileOptions::default());
    let unfused = run(&CompileOptions::default().fusion(false));
    assert_eq!(fused[0].bytes(), unfused[0].bytes());
}

#[test]
fn misses_are_reported_with_their_reason() {
    let mut g = Graph::new("misses");
    let x = g.input("x", Shape::new(&[4, 8], DType::F32));
    let row = g.input("row", Shape::new(&[8], DType::F32));
    let shared = g.exp(x); // read twice
    let small = g.neg(row); // broadcast into the region
    let a = g.add(shared, small);
    let a = g.tanh(a);
    let b = g.mul(shared, 2.0);
    let b = g.sigmoid(b);
    g.set_outputs(vec![a, b]);
    let c = Session::new(Device::Cpu).compile(g);
    let report = &c.lir().fusion;
    assert_eq!(report.regions.len(), 2, "{report}");
    let reasons: Vec<MissReason> = report.missed.iter().map(|m| m.reason).collect();
    assert!(reasons.contains(&MissReason::MultipleConsumers), "{report}");
    assert!(reasons.contains(&MissReason::BroadcastProducer), "{report}");
    assert!(report.to_string().contains("missed"), "{report}");
}
