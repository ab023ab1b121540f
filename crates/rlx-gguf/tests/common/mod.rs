//! Helpers shared by the integration tests.
#![allow(dead_code)]

use rlx_gguf::GgufReader;
use std::path::PathBuf;

/// Path of a committed fixture (written by tools/gen_gguf_fixtures.py).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A committed fixture, read into memory.
pub fn open(name: &str) -> GgufReader<Vec<u8>> {
    GgufReader::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Asserts two f32 slices are bit-identical, naming the first difference.
pub fn assert_bits_eq(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        panic!(
            "{what}: element {i} is {:e} ({:#010x}), reference {:e} ({:#010x})",
            got[i],
            got[i].to_bits(),
            want[i],
            want[i].to_bits()
        );
    }
}

/// Asserts two byte slices are identical, naming the first difference.
pub fn assert_bytes_eq(what: &str, got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: byte {i} is {:#04x}, reference {:#04x} ({} bytes differ)",
            got[i],
            want[i],
            got.iter().zip(want).filter(|(a, b)| a != b).count()
        );
    }
}

/// A tiny deterministic PRNG (SplitMix64) so tests need no extra crates.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}
