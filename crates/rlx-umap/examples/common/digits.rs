//! The scikit-learn digits (1,797 x 64 raw pixels 0..16, committed under
//! `crates/rlx/examples/data/digits/`), shared by the examples and tests.

use flate2::read::GzDecoder;
use std::io::Read;

/// Row-major pixels `[1797, 64]` and the labels.
pub fn load_digits() -> Result<(Vec<f64>, Vec<usize>), Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rlx/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let (mut x, mut labels) = (Vec::new(), Vec::new());
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let v: Vec<f64> = line.split(',').map(str::parse).collect::<Result<_, _>>()?;
        if v.len() != 65 {
            return Err(
                format!("{path}: line {} has {} fields, expected 65", n + 1, v.len()).into(),
            );
        }
        x.extend_from_slice(&v[..64]);
        labels.push(v[64] as usize);
    }
    Ok((x, labels))
}
