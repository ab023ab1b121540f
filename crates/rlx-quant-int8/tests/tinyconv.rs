//! The committed digits CNN: the rlx-cortexm kernels equal the integer
//! reference on every layer of every held-out image, and its held-out
//! accuracy is within 1 point of the float model's (the float predictions
//! were stored by the `cortexm_digits` example with the model).
use rlx_quant_int8::{
    cortexm_layer, emit_model_weights, tinyconv_mnist_from_cortexm, tinyconv_test_set, QLayer,
};

#[test]
fn kernels_match_the_integer_reference_layer_by_layer() {
    let model = tinyconv_mnist_from_cortexm();
    let set = tinyconv_test_set();
    assert!(set.images.len() >= 300);
    assert!(matches!(model.layers[0], QLayer::Conv2d { .. }));
    for (n, image) in set.images.iter().enumerate() {
        let reference = model.run_reference_all(image).unwrap();
        let mut x = image.clone();
        for (i, (layer, want)) in model.layers.iter().zip(&reference).enumerate() {
            let mut out = vec![0i8; layer.output_len()];
            cortexm_layer(layer).run(&x, &mut out).unwrap();
            assert_eq!(&out, want, "image {n} layer {i}");
            x = out;
        }
        assert_eq!(
            model.run_cortexm(image).unwrap(),
            *reference.last().unwrap()
        );
    }
}

#[test]
fn int8_accuracy_is_within_one_point_of_float() {
    let model = tinyconv_mnist_from_cortexm();
    let set = tinyconv_test_set();
    let n = set.labels.len() as f64;
    let mut int8_right = 0;
    let mut float_right = 0;
    for ((image, &label), &float) in set
        .images
        .iter()
        .zip(&set.labels)
        .zip(&set.float_predictions)
    {
        let out = model.run_reference(image).unwrap();
        let class = (0..out.len()).fold(0, |b, i| if out[i] > out[b] { i } else { b });
        int8_right += usize::from(class == label);
        float_right += usize::from(float == label);
    }
    let (q, f) = (
        100.0 * int8_right as f64 / n,
        100.0 * float_right as f64 / n,
    );
    assert!(f >= 95.0, "float accuracy {f}");
    assert!((q - f).abs() <= 1.0, "int8 {q:.2}% vs float {f:.2}%");
}

#[test]
fn the_firmware_weights_are_the_generator_output_for_the_committed_model() {
    let model = tinyconv_mnist_from_cortexm();
    let set = tinyconv_test_set();
    let committed = include_str!("../../../firmware/cortexm-digits/src/model_weights.rs");
    assert!(
        emit_model_weights(&model, &set.images[..64]) == committed,
        "firmware/cortexm-digits/src/model_weights.rs is stale: re-run \
         `cargo run -p rlx-quant-int8 --example tinyconv_predict -- 64 --write-firmware \
         firmware/cortexm-digits/src/model_weights.rs`"
    );
}
