//! The quantized digits CNN that the Cortex-M firmware runs ("tinyconv"):
//! conv 3x3 (8) + ReLU, max-pool 2, conv 3x3 (16) + ReLU, max-pool 2,
//! dense 64 -> 10 over 8x8 one-channel images. Trained and quantized by
//! `cargo run -p rlx --example cortexm_digits --features cortexm -- --write`,
//! which writes `data/tinyconv_digits.json` (the model) and
//! `data/tinyconv_digits_test.json` (held-out images with their labels).

use crate::model::QuantizedModel;
use serde::Deserialize;

const MODEL: &str = include_str!("../data/tinyconv_digits.json");
const TEST: &str = include_str!("../data/tinyconv_digits_test.json");

/// The quantized digits CNN of the Cortex-M firmware.
pub fn tinyconv_mnist_from_cortexm() -> QuantizedModel {
    QuantizedModel::from_json(MODEL).expect("the committed tinyconv model parses")
}

/// Held-out digits images (quantized with the model's input parameters)
/// and labels, the set the firmware's `TEST_IMAGES` are taken from.
#[derive(Clone, Debug, PartialEq, Deserialize, serde::Serialize)]
pub struct TinyconvTestSet {
    /// int8 NHWC images.
    pub images: Vec<Vec<i8>>,
    /// Their digits.
    pub labels: Vec<usize>,
    /// What the float model predicted for each.
    pub float_predictions: Vec<usize>,
}

/// The held-out images stored with [`tinyconv_mnist_from_cortexm`].
pub fn tinyconv_test_set() -> TinyconvTestSet {
    serde_json::from_str(TEST).expect("the committed tinyconv test set parses")
}
