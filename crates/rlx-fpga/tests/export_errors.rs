//! Bad input is a named error at export time, and nothing is written.

use rlx_fpga::{
    emit_with_config, tinyconv_mnist_from_cortexm, FpgaError, FpgaExportConfig, HwTarget, IoConfig,
    PortNames,
};
use rlx_quant_int8::{QLayer, TensorQuant};

fn export(
    model: &rlx_fpga::QuantizedModel,
    config: &FpgaExportConfig,
    name: &str,
) -> (Result<rlx_fpga::ExportedArtifacts, FpgaError>, bool) {
    let dir = std::env::temp_dir().join(format!("rlx-fpga-err-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let r = emit_with_config(model, config, &dir);
    let wrote = dir.exists();
    (r, wrote)
}

#[test]
fn unsupported_layers_are_named() {
    let mut model = tinyconv_mnist_from_cortexm();
    model.layers.push(QLayer::Softmax {
        len: 10,
        classes: 10,
        input: TensorQuant {
            scale: 0.1,
            zero_point: 0,
        },
        multiplier: 1 << 30,
        left_shift: 20,
        diff_min: -100,
    });
    let (r, wrote) = export(&model, &FpgaExportConfig::default(), "softmax");
    assert!(matches!(
        r,
        Err(FpgaError::UnsupportedLayer {
            layer: 5,
            kind: "softmax"
        })
    ));
    assert!(!wrote);

    let mut model = tinyconv_mnist_from_cortexm();
    let QLayer::MaxPool { geometry, quant } = model.layers[1].clone() else {
        panic!("layer 1 of tinyconv is a max pool")
    };
    model.layers[1] = QLayer::AvgPool { geometry, quant };
    let (r, _) = export(&model, &FpgaExportConfig::default(), "avgpool");
    assert!(matches!(
        r,
        Err(FpgaError::UnsupportedLayer {
            layer: 1,
            kind: "avgpool"
        })
    ));
}

#[test]
fn a_tensor_larger_than_the_declared_memory_is_refused() {
    let model = tinyconv_mnist_from_cortexm();
    // conv2's 1152 int8 weights are the largest tensor: 9216 bits.
    let config = FpgaExportConfig {
        memory_bits: Some(9000),
        ..Default::default()
    };
    let (r, wrote) = export(&model, &config, "mem");
    match r {
        Err(FpgaError::MemoryOverflow {
            memory,
            bits,
            capacity,
        }) => {
            assert_eq!((memory.as_str(), bits, capacity), ("l2_w", 9216, 9000));
        }
        other => panic!("expected MemoryOverflow, got {other:?}"),
    }
    assert!(!wrote);

    // Every tensor fits 9216 bits but all of them together do not.
    let config = FpgaExportConfig {
        memory_bits: Some(9216),
        ..Default::default()
    };
    let (r, _) = export(&model, &config, "memtotal");
    assert!(
        matches!(&r, Err(FpgaError::MemoryOverflow { memory, .. }) if memory == "all memories"),
        "{r:?}"
    );

    // The real targets hold it.
    for target in [HwTarget::Ecp5, HwTarget::Ice40, HwTarget::Xilinx7] {
        let config = FpgaExportConfig {
            hw_target: target,
            ..Default::default()
        };
        let (r, _) = export(&model, &config, "targets");
        let arts = r.unwrap();
        assert!(
            arts.files
                .iter()
                .any(|f| f.extension().is_some_and(|e| e == "sh" || e == "tcl")),
            "{target:?} writes its build script"
        );
    }
}

#[test]
fn an_accumulator_that_can_overflow_its_width_is_refused() {
    let model = tinyconv_mnist_from_cortexm();
    let config = FpgaExportConfig {
        acc_bits: 16,
        ..Default::default()
    };
    let (r, wrote) = export(&model, &config, "acc16");
    match r {
        Err(FpgaError::AccumulatorOverflow {
            layer,
            acc_bits,
            bound,
            ..
        }) => {
            assert_eq!((layer, acc_bits), (0, 16));
            assert!(bound >= 1 << 15);
        }
        other => panic!("expected AccumulatorOverflow, got {other:?}"),
    }
    assert!(!wrote);

    // Weights pushed to the int8 limit over a deep dense layer overflow 32 bits.
    let mut model = tinyconv_mnist_from_cortexm();
    let QLayer::Dense { params, .. } = &mut model.layers[4] else {
        panic!("layer 4 of tinyconv is dense")
    };
    params.weights.iter_mut().for_each(|w| *w = -128);
    params.bias[3] = i32::MAX - 1000;
    let (r, _) = export(&model, &FpgaExportConfig::default(), "acc32");
    assert!(
        matches!(
            r,
            Err(FpgaError::AccumulatorOverflow {
                layer: 4,
                channel: 3,
                acc_bits: 32,
                ..
            })
        ),
        "{r:?}"
    );
}

#[test]
fn malformed_models_and_options_are_refused() {
    let mut model = tinyconv_mnist_from_cortexm();
    model.layers.remove(1); // conv2 now gets 512 values instead of 128
    let (r, _) = export(&model, &FpgaExportConfig::default(), "shape");
    assert!(matches!(r, Err(FpgaError::Shape { layer: 1, .. })), "{r:?}");

    let mut model = tinyconv_mnist_from_cortexm();
    model.layers.clear();
    let (r, _) = export(&model, &FpgaExportConfig::default(), "empty");
    assert!(matches!(r, Err(FpgaError::EmptyModel)));

    let model = tinyconv_mnist_from_cortexm();
    let bad_port = FpgaExportConfig {
        io: IoConfig {
            ports: PortNames {
                done: "9done".into(),
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    };
    let (r, wrote) = export(&model, &bad_port, "port");
    assert!(matches!(r, Err(FpgaError::InvalidConfig(_))), "{r:?}");
    assert!(!wrote);

    let clash = FpgaExportConfig {
        io: IoConfig {
            ports: PortNames {
                busy: "clk".into(),
                ..Default::default()
            },
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(matches!(
        export(&model, &clash, "clash").0,
        Err(FpgaError::InvalidConfig(_))
    ));

    let short_image = FpgaExportConfig {
        testbench_images: vec![vec![0; 63]],
        ..Default::default()
    };
    assert!(matches!(
        export(&model, &short_image, "image").0,
        Err(FpgaError::InvalidConfig(_))
    ));
}

#[test]
fn latency_is_the_sum_of_the_engines() {
    // conv1 512 outputs x (9 taps + 2), pool1 128 x (4 + 2), conv2 256 x (72 + 2),
    // pool2 64 x (4 + 2), dense 10 x (64 + 2), scan 10, done 1.
    let want = 512 * 11 + 128 * 6 + 256 * 74 + 64 * 6 + 10 * 66 + 10 + 1;
    let (r, _) = export(
        &tinyconv_mnist_from_cortexm(),
        &FpgaExportConfig::default(),
        "latency",
    );
    let arts = r.unwrap();
    assert_eq!(arts.latency_cycles, want);
    // 1152 + 72 + 640 weights, 34 biases / multipliers / shifts, 64 + 512 + 128 + 256 + 64 + 10 activations.
    let bits = 8 * (1152 + 72 + 640) + 34 * (32 + 32 + 8) + 8 * (64 + 512 + 128 + 256 + 64 + 10);
    assert_eq!(arts.resources.bram_bits, bits);
}
