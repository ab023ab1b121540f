//! `ExportSession` (feature `fpga`): the builder's options reach the files,
//! and the exported digits CNN simulates to rlx-quant-int8's reference.
#![cfg(feature = "fpga")]

use rlx_runtime::export::{tinyconv_mnist_from_cortexm, HwTarget};
use rlx_runtime::{export_tinyconv_mnist, ExportSession};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-runtime-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn export_session_writes_the_target_script_and_simulates_to_the_reference() {
    let model = tinyconv_mnist_from_cortexm();
    let images: Vec<Vec<i8>> = rlx_quant_int8::tinyconv_test_set().images[..4].to_vec();
    let dir = scratch("ice40");
    let arts = ExportSession::fpga(&dir)
        .hw_target(HwTarget::Ice40)
        .testbench_images(images.clone())
        .export_model(&model)
        .unwrap();
    assert!(dir.join(format!("{}_ice40.sh", arts.top)).exists());
    for f in &arts.files {
        assert!(f.exists(), "{f:?}");
    }
    let tools = ["iverilog", "vvp"]
        .iter()
        .all(|t| rlx_fpga::sim::tool_available(t));
    if !tools {
        assert!(
            std::env::var("RLX_REQUIRE_HDL").map_or(true, |v| v != "1"),
            "RLX_REQUIRE_HDL=1 but iverilog is not installed"
        );
        eprintln!("SKIPPED: iverilog not installed");
        return;
    }
    let sim = rlx_fpga::sim::simulate_iverilog(&arts).unwrap();
    for (got, image) in sim.iter().zip(&images) {
        assert_eq!(got.logits, model.run_reference(image).unwrap());
    }
}

#[test]
fn export_tinyconv_mnist_carries_64_test_images() {
    let arts = export_tinyconv_mnist(scratch("tinyconv")).unwrap();
    assert_eq!(arts.testbench_images, 64);
    assert!(arts.testbench().is_some_and(|p| p.exists()));
}
