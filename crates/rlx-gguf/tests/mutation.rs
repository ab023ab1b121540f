//! A bounded, seeded fuzz run in the normal test suite (the cargo-fuzz
//! target in fuzz/ explores further; see tools/fuzz_gguf.sh): 20,000
//! mutations of valid files, each parsed and, when it parses, every tensor
//! read and dequantized. Nothing may panic; errors are fine.

mod common;
use common::{fixture, Rng};
use rlx_gguf::{GgufContent, GgufReader};

const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    3,
    4,
    7,
    0x7f,
    0xffff,
    u32::MAX as u64,
    1 << 32,
    i64::MAX as u64,
    u64::MAX,
];

fn mutate(rng: &mut Rng, base: &[u8], header_len: usize) -> Vec<u8> {
    let mut b = base.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        // Mostly hit the header, key/values and tensor infos; sometimes data.
        let span = if rng.below(4) == 0 {
            b.len()
        } else {
            header_len.min(b.len())
        };
        if span == 0 {
            break;
        }
        let at = rng.below(span as u64) as usize;
        match rng.below(6) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = [0u8, 0xff, 0x7f, 0x80, 1, 9][rng.below(6) as usize],
            2 => {
                let v = INTERESTING[rng.below(INTERESTING.len() as u64) as usize].to_le_bytes();
                let w = if rng.below(2) == 0 { 4 } else { 8 };
                for (k, byte) in v.iter().take(w).enumerate() {
                    if at + k < b.len() {
                        b[at + k] = *byte;
                    }
                }
            }
            3 => b.truncate(at),
            4 => {
                let n = 1 + rng.below(16) as usize;
                b.drain(at..(at + n).min(b.len()));
            }
            _ => {
                let n = 1 + rng.below(16) as usize;
                let ins: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
                b.splice(at..at, ins);
            }
        }
    }
    b
}

fn exercise(bytes: &[u8]) -> bool {
    let Ok(r) = GgufReader::new(bytes) else {
        return false;
    };
    for (k, v) in r.metadata().iter() {
        let _ = (
            k.len(),
            v.value_type(),
            v.as_u64(),
            v.as_str(),
            v.as_array().map(|a| a.len()),
        );
    }
    for t in r.tensors() {
        let data = r.tensor_data(t.name()).unwrap();
        assert_eq!(data.len() as u64, t.n_bytes());
        let _ = r.tensor(t.name());
        let _ = r.dequantize(t.name());
    }
    true
}

#[test]
fn twenty_thousand_mutations_never_panic() {
    let mut rng = Rng(0x5eed_6775_f00d);
    let mut parsed = 0;
    let mut total = 0;
    for (name, n) in [
        ("metadata.gguf", 12_000),
        ("v1.gguf", 3_000),
        ("rust_written.gguf", 4_000),
        ("split-00001-of-00003.gguf", 1_000),
    ] {
        let base = std::fs::read(fixture(name)).unwrap();
        let header_len = GgufContent::parse(&base).unwrap().data_offset() as usize;
        for _ in 0..n {
            let m = mutate(&mut rng, &base, header_len);
            parsed += usize::from(exercise(&m));
            total += 1;
        }
    }
    assert_eq!(total, 20_000);
    // The run is only meaningful if mutations reach past the first checks.
    assert!(parsed > 1_000, "only {parsed} of {total} mutants parsed");
}
