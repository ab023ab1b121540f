//! ONNX backend node cases (a small committed subset, picked by
//! tools/gen_onnx_fixtures.py): every case must match onnx's reference
//! outputs at the case's tolerances.

use rlx_onnx::conformance::{run_case_on, Outcome};
use rlx_onnx::Device;
use std::path::Path;

#[test]
fn committed_node_cases_match_onnx_reference_outputs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/node")
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(
        cases.len() > 100,
        "expected the committed subset, found {}",
        cases.len()
    );
    let mut bad = Vec::new();
    for c in &cases {
        let (outcome, detail) = run_case_on(Device::Cpu, c);
        if outcome != Outcome::Pass {
            bad.push(format!(
                "{}: {outcome:?} {detail}",
                c.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} cases do not pass:\n{}",
        bad.len(),
        cases.len(),
        bad.join("\n")
    );
}
