//! The scikit-learn *digits* data set (committed under `examples/data/digits/`)
//! and the small deterministic generator the digits examples shuffle and
//! initialise with. Included by those examples with `#[path]`.
use flate2::read::GzDecoder;
use std::io::Read;

/// A tiny deterministic generator (splitmix64) for the shuffle and the init.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self, bound: f32) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
    }
}

/// (pixels scaled to [0, 1], label) per image.
pub fn load_digits() -> rlx::Result<Vec<(Vec<f32>, usize)>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let v: Vec<f32> = line.split(',').map(str::parse).collect::<Result<_, _>>()?;
        anyhow::ensure!(
            v.len() == 65,
            "{path}: line {} has {} fields, expected 65",
            n + 1,
            v.len()
        );
        rows.push((v[..64].iter().map(|p| p / 16.0).collect(), v[64] as usize));
    }
    Ok(rows)
}
