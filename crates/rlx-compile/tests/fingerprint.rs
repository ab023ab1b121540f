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

fn sample_key() -> u64 {
    let values: Vec<f32> = (0..16).map(|i| i as f32 * 0.5).collect();
    key(&scaled(&values, "g"))
}

/// Prints the key when run as the child of the test below.
#[test]
fn fingerprint_child() {
    if std::env::var_os("RLX_FINGERPRINT_CHILD").is_some() {
        println!("fingerprint={:016x}", sample_key());
    }
}

#[test]
fn fingerprint_is_stable_across_processes() {
    // xxh3 of the text, plan and constant bytes: no per-process seed, so
    // a fresh process computes the same key.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fingerprint_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RLX_FINGERPRINT_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let child = stdout
        .lines()
        .find_map(|l| l.split("fingerprint=").nth(1))
        .unwrap_or_else(|| panic!("no key from the child:\n{stdout}"));
    assert_eq!(child, format!("{:016x}", sample_key()));
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
