//! The exported digits CNN, simulated with iverilog over the held-out
//! images, against the integer reference of rlx-quant-int8 (bit for bit),
//! and linted with `verilator --lint-only -Wall`.

mod common;

use rlx_fpga::sim::{simulate_iverilog, verilator_lint};
use rlx_fpga::{
    emit_with_config, tinyconv_mnist_from_cortexm, FpgaExportConfig, InputIface, IoConfig,
    OutputIface, OutputKind, SidebandSpec,
};
use rlx_quant_int8::tinyconv_test_set;

fn argmax(v: &[i8]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

#[test]
fn digits_cnn_rtl_is_bit_exact_over_64_images() {
    if !common::hdl_tools() {
        return;
    }
    let model = tinyconv_mnist_from_cortexm();
    let set = tinyconv_test_set();
    assert!(
        set.images.len() >= 64,
        "only {} test images",
        set.images.len()
    );
    let images: Vec<Vec<i8>> = set.images[..64].to_vec();
    let config = FpgaExportConfig {
        testbench_images: images.clone(),
        ..Default::default()
    };
    let arts = emit_with_config(&model, &config, common::scratch("digits")).unwrap();
    verilator_lint(&arts).unwrap();
    let sim = simulate_iverilog(&arts).unwrap();
    let mut correct = 0;
    for (i, (got, image)) in sim.iter().zip(&images).enumerate() {
        let want = model.run_reference(image).unwrap();
        assert_eq!(got.logits, want, "image {i}: logits");
        assert_eq!(got.class, argmax(&want), "image {i}: class");
        assert_eq!(got.cycles, arts.latency_cycles, "image {i}: cycles");
        correct += usize::from(got.class == set.labels[i]);
    }
    let _ = std::fs::remove_dir_all(&arts.dir);
    eprintln!(
        "RTL sim: 64 images bit-exact, {correct}/64 correct, {} cycles per inference, {:?}",
        arts.latency_cycles, arts.resources
    );
}

#[test]
fn memory_mapped_io_argmax_sideband_and_a_24_bit_accumulator_match_the_reference() {
    if !common::hdl_tools() {
        return;
    }
    let model = tinyconv_mnist_from_cortexm();
    let images: Vec<Vec<i8>> = tinyconv_test_set().images[64..72].to_vec();
    for (name, io, acc_bits) in [
        (
            "mm",
            IoConfig {
                input: InputIface::MemoryMapped,
                output: OutputIface::MemoryMapped,
                sideband: Some(SidebandSpec {
                    name: "frame".into(),
                    width: 12,
                }),
                ..Default::default()
            },
            32,
        ),
        (
            "argmax",
            IoConfig {
                kind: OutputKind::Argmax,
                ..Default::default()
            },
            32,
        ),
        // The worst case of conv2 (72 taps of |x - zp| <= 255, |w| <= 127) fits 24 bits.
        ("acc24", IoConfig::default(), 24),
    ] {
        let config = FpgaExportConfig {
            io: io.clone(),
            top_name: Some(format!("digits_{name}")),
            acc_bits,
            testbench_images: images.clone(),
            ..Default::default()
        };
        let arts = emit_with_config(&model, &config, common::scratch(name)).unwrap();
        verilator_lint(&arts).unwrap();
        let sim = simulate_iverilog(&arts).unwrap();
        for (i, (got, image)) in sim.iter().zip(&images).enumerate() {
            let want = model.run_reference(image).unwrap();
            assert_eq!(got.class, argmax(&want), "{name} image {i}: class");
            assert_eq!(got.cycles, arts.latency_cycles, "{name} image {i}: cycles");
            if io.kind == OutputKind::Logits {
                assert_eq!(got.logits, want, "{name} image {i}: logits");
            } else {
                assert!(got.logits.is_empty());
            }
            if io.sideband.is_some() {
                assert_eq!(got.tag, i as u64 + 1, "{name} image {i}: sideband tag");
            }
        }
        let _ = std::fs::remove_dir_all(&arts.dir);
    }
}
