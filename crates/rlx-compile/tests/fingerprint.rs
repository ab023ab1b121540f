//! The LIR fingerprint is a cache key: equal compiles agree (also across
//! processes: the value is pinned), any change to the graph changes it.

use rlx_compile::{lower, LowerOptions};
use rlx_ir::{DType, Graph, GraphExt, GraphModule, HostTensor, Shape, StageKind};

fn scaled(values: &[f32], name: &str) -> Graph {
    let mut g = Graph::new(name);
    let x = g.input("x", Shape::new(&[values.len()], DType::F32));
    let c = g.constant_tensor(&HostTensor::from_slice(values, &[values.len()]).unwrap());
    let y = g.mul(x, c);
    let z = g.exp(y);
    g.set_outputs(vec![z]);
    g
}

fn key(g: &Graph) -> u64 {
    lower(g, &|_| true, &LowerOptions::default())
        .unwrap()
        .fingerprint
}

#[test]
fn equal_compiles_agree_and_any_change_differs() {
    let values: Vec<f32> = (0..16).map(|i| i as f32 * 0.5).collect();
    let a = key(&scaled(&values, "g"));
    assert_eq!(a, key(&scaled(&values, "g")));
    // A value deep inside a constant the text abbreviates as `constant<64 bytes>`.
    let mut other = values.clone();
    other[11] = 7.25;
    assert_ne!(a, key(&scaled(&other, "g")));
    assert_ne!(a, key(&scaled(&values, "renamed")));
    let mut g = scaled(&values, "g");
    let out = g.outputs()[0];
    let extra = g.neg(out);
    g.set_outputs(vec![extra]);
    assert_ne!(a, key(&g));
    // A different arena alignment is a different plan.
    let aligned = LowerOptions {
        alignment: 256,
        ..LowerOptions::default()
    };
    let b = lower(&scaled(&values, "g"), &|_| true, &aligned)
        .unwrap()
        .fingerprint;
    assert_ne!(a, b);
}

#[test]
fn fingerprint_is_stable_across_processes() {
    // FNV-1a of the text, plan and constant bytes: no per-process seed. If the
    // textual IR format changes on purpose, update this value (old caches are
    // then invalid, as they should be).
    let values: Vec<f32> = (0..16).map(|i| i as f32 * 0.5).collect();
    assert_eq!(
        format!("{:016x}", key(&scaled(&values, "g"))),
        "3bbe72fbc886fe69"
    );
}

#[test]
fn lir_is_a_stage_with_its_fingerprint_in_the_text() {
    let values = [1.0f32, 2.0];
    let lir = lower(&scaled(&values, "g"), &|_| true, &LowerOptions::default()).unwrap();
    let text = rlx_compile::inspect_lir(&lir);
    assert!(text.starts_with("lir \"g\""), "{text}");
    assert!(
        text.contains(&format!("# fingerprint {:016x}", lir.fingerprint)),
        "{text}"
    );
    let m = GraphModule::new(lir);
    assert_eq!(m.kind(), StageKind::Lir);
    assert!(m.stage().mir().is_some());
}
