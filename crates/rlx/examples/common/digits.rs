//! The scikit-learn *digits* data set (committed under `examples/data/digits/`)
//! for the digits examples, with the generator `rlx::train::digits` shuffles
//! and initialises with. Included by those examples with `#[path]`.
use flate2::read::GzDecoder;
use std::io::Read;

pub use rlx::train::digits::Rng;

/// (pixels scaled to [0, 1], label) per image.
pub fn load_digits() -> rlx::Result<Vec<(Vec<f32>, usize)>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    rlx::train::digits::parse_digits_csv(&text)
}
