//! Hostile and corrupt files: every one is a clear error (naming the offset,
//! key, tensor or type id), never a panic, and no size read from the file is
//! trusted before it is checked against the bytes that remain.

mod common;
use common::fixture;
use rlx_gguf::{GgufContent, GgufError, GgufReader, MAX_ARRAY_DEPTH};

/// Packs GGUF bytes with any values, valid or not.
struct Raw {
    b: Vec<u8>,
    v1: bool,
}

impl Raw {
    fn new(version: u32, n_tensors: u64, n_kv: u64) -> Raw {
        let mut r = Raw {
            b: b"GGUF".to_vec(),
            v1: version == 1,
        };
        r.u32(version).count(n_tensors).count(n_kv);
        r
    }
    fn u8(&mut self, v: u8) -> &mut Raw {
        self.b.push(v);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Raw {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Raw {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn count(&mut self, v: u64) -> &mut Raw {
        if self.v1 {
            self.u32(v as u32)
        } else {
            self.u64(v)
        }
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Raw {
        self.count(v.len() as u64);
        self.b.extend_from_slice(v);
        self
    }
    fn str(&mut self, s: &str) -> &mut Raw {
        self.bytes(s.as_bytes())
    }
    /// A tensor info: name, dims (ne order), type id, offset.
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Raw {
        self.str(name).u32(dims.len() as u32);
        for &d in dims {
            self.count(d);
        }
        self.u32(ty).u64(offset)
    }
    /// Pads to 32 and appends `n` data bytes.
    fn data(&mut self, n: usize) -> &mut Raw {
        let padded = self.b.len().div_ceil(32) * 32;
        self.b.resize(padded, 0);
        self.b.resize(padded + n, 0x3c);
        self
    }
    fn parse(&self) -> Result<GgufContent, GgufError> {
        GgufContent::parse(&self.b)
    }
}

fn err(raw: &Raw) -> String {
    match raw.parse() {
        Ok(_) => panic!("hostile file parsed"),
        Err(e) => e.to_string(),
    }
}

/// One F32 tensor of 4 values after one key/value: a minimal valid file.
fn minimal() -> Raw {
    let mut r = Raw::new(3, 1, 1);
    r.str("general.architecture").u32(8).str("x");
    r.tensor("w", &[4], 0, 0).data(16);
    r
}

#[test]
fn minimal_file_is_valid() {
    let c = minimal().parse().unwrap();
    assert_eq!(c.tensors()[0].n_bytes(), 16);
}

fn check_every_truncation(name: &str, bytes: &[u8]) {
    let full = GgufContent::parse(bytes).unwrap();
    let end = full
        .tensors()
        .iter()
        .map(|t| t.file_offset() + t.n_bytes())
        .max()
        .unwrap_or(0) as usize;
    for n in 0..end {
        match GgufContent::parse(&bytes[..n]) {
            Ok(_) => panic!("{name} truncated to {n} of {} bytes parsed", bytes.len()),
            Err(GgufError::Truncated { offset, .. } | GgufError::CountTooLarge { offset, .. }) => {
                assert!(offset as usize <= n, "{name}@{n}: offset {offset}")
            }
            Err(GgufError::BadMagic { .. } | GgufError::TensorOutOfFile { .. }) => {}
            Err(e) => panic!("{name} truncated to {n}: unexpected {e}"),
        }
    }
    // Cutting only trailing padding after the last tensor still parses.
    for n in end..bytes.len() {
        GgufContent::parse(&bytes[..n]).unwrap();
    }
}

#[test]
fn truncation_at_every_byte_of_every_section_is_an_error() {
    for name in [
        "metadata.gguf",
        "v1.gguf",
        "split-00001-of-00003.gguf",
        "rust_written.gguf",
    ] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        check_every_truncation(name, &bytes);
    }
    check_every_truncation("minimal", &minimal().b);
}

#[test]
fn absurd_counts_are_refused_before_allocating() {
    for (t, kv) in [
        (u64::MAX, 0),
        (0, u64::MAX),
        (1 << 40, 1 << 40),
        (u64::MAX, u64::MAX),
    ] {
        let e = err(&Raw::new(3, t, kv));
        assert!(e.contains("count"), "{e}");
    }
    let e = err(&Raw::new(1, 0, u32::MAX as u64));
    assert!(
        e.contains("key/value count") && e.contains("4294967295"),
        "{e}"
    );
    // A plausible tensor count that the remaining bytes cannot hold.
    let mut r = Raw::new(3, 1000, 0);
    r.tensor("w", &[4], 0, 0).data(16);
    assert!(err(&r).contains("tensor count"));
}

#[test]
fn absurd_string_and_array_lengths_are_refused() {
    // Key length.
    let mut r = Raw::new(3, 0, 1);
    r.u64(u64::MAX).data(64);
    let e = err(&r);
    assert!(
        e.contains("length of key of metadata entry #0") && e.contains("offset 24"),
        "{e}"
    );
    // String value length.
    let mut r = Raw::new(3, 0, 1);
    r.str("k").u32(8).u64(1 << 62);
    assert!(err(&r).contains("string value of key 'k'"));
    // Array lengths: fixed-size, string and nested elements.
    for elem in [10u32, 8, 9] {
        let mut r = Raw::new(3, 0, 1);
        r.str("k").u32(9).u32(elem).u64(u64::MAX / 2);
        let e = err(&r);
        assert!(e.contains("array length of key 'k'"), "{e}");
    }
    // Tensor name length (v1, u32).
    let mut r = Raw::new(1, 1, 0);
    r.u32(u32::MAX).data(64);
    let e = err(&r);
    assert!(
        e.contains("name of tensor #0") && e.contains("4294967295"),
        "{e}"
    );
}

#[test]
fn deep_nesting_is_refused() {
    let depth = MAX_ARRAY_DEPTH + 5;
    let mut r = Raw::new(3, 0, 1);
    r.str("deep").u32(9);
    for _ in 0..depth {
        r.u32(9).u64(1);
    }
    r.u32(4).u64(1).u32(7);
    let e = err(&r);
    assert!(
        e.contains("nested deeper than 64") && e.contains("'deep'"),
        "{e}"
    );
    // The limit itself is fine.
    let mut r = Raw::new(3, 0, 1);
    r.str("deep").u32(9);
    for _ in 0..MAX_ARRAY_DEPTH - 1 {
        r.u32(9).u64(1);
    }
    r.u32(4).u64(1).u32(7);
    r.parse().unwrap();
}

#[test]
fn absurd_dims_are_refused() {
    for (dims, ty, needle) in [
        (vec![1u64; 5], 0u32, "n_dims 5"),
        (vec![1; 1000], 0, "n_dims 1000"),
        (vec![1 << 40, 1 << 40], 0, "overflows"),
        (vec![u64::MAX], 0, "exceeds i64::MAX"),
        (vec![100], 12, "not a multiple of the Q4_K block size 256"),
        (vec![1 << 30, 1 << 30], 0, "outside the file"),
    ] {
        let mut r = Raw::new(3, 1, 0);
        r.tensor("big", &dims, ty, 0).data(64);
        let e = err(&r);
        assert!(e.contains(needle) && e.contains("'big'"), "{dims:?}: {e}");
    }
}

#[test]
fn unknown_types_name_the_id() {
    let mut r = Raw::new(3, 1, 0);
    r.tensor("w", &[4], 9999, 0).data(16);
    let e = err(&r);
    assert!(e.contains("type id 9999") && e.contains("'w'"), "{e}");
    let mut r = Raw::new(3, 1, 0);
    r.tensor("w", &[32], 31, 0).data(64);
    let e = err(&r);
    assert!(e.contains("31") && e.contains("Q4_0_4_4"), "{e}");
    let mut r = Raw::new(3, 0, 1);
    r.str("k").u32(13).u32(0);
    let e = err(&r);
    assert!(
        e.contains("value type id 13") && e.contains("'k'") && e.contains("offset 33"),
        "{e}"
    );
    let mut r = Raw::new(3, 0, 1);
    r.str("k").u32(9).u32(77).u64(0);
    assert!(err(&r).contains("value type id 77"));
}

#[test]
fn misaligned_overlapping_and_out_of_file_offsets() {
    let two_sized = |na: u64, a: u64, b: u64| {
        let mut r = Raw::new(3, 2, 0);
        r.tensor("a", &[na], 0, a).tensor("b", &[8], 0, b).data(128);
        r
    };
    let two = |a: u64, b: u64| two_sized(8, a, b);
    two(0, 32).parse().unwrap();
    two(32, 0).parse().unwrap();
    let e = err(&two_sized(16, 0, 32));
    assert!(
        e.contains("'a'") && e.contains("'b'") && e.contains("overlap"),
        "{e}"
    );
    let e = err(&two(0, 4));
    assert!(
        e.contains("'b'") && e.contains("offset 4") && e.contains("alignment 32"),
        "{e}"
    );
    let e = err(&two(0, 0));
    assert!(e.contains("overlap"), "{e}");
    let e = err(&two(0, 128));
    assert!(e.contains("'b'") && e.contains("outside the file"), "{e}");
    let e = err(&two(0, u64::MAX - 31));
    assert!(e.contains("outside the file"), "{e}");
}

#[test]
fn bad_magic_version_and_endianness() {
    for bytes in [&b""[..], b"GG", b"GGUG\x03\0\0\0", b"\0\0\0\0"] {
        let e = GgufContent::parse(bytes).unwrap_err();
        assert!(matches!(e, GgufError::BadMagic { .. }), "{e}");
        assert!(e.to_string().contains("GGUF"));
    }
    for v in [0u32, 4, 0xdead] {
        let e = err(&Raw::new(v, 0, 0));
        assert!(e.contains(&format!("version {v}")), "{e}");
    }
    let mut r = Raw::new(3, 0, 0);
    r.b[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert!(err(&r).contains("big-endian"));
}

#[test]
fn bad_alignment_values() {
    let cases: [(u32, Vec<u8>, &str); 4] = [
        (4, 0u32.to_le_bytes().to_vec(), "0 is not"),
        (4, 48u32.to_le_bytes().to_vec(), "48 is not"),
        (10, 32u64.to_le_bytes().to_vec(), "UINT64"),
        (
            8,
            [3, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', b'c'].to_vec(),
            "STRING",
        ),
    ];
    for (ty, val, needle) in cases {
        let mut r = Raw::new(3, 0, 1);
        r.str("general.alignment").u32(ty);
        r.b.extend_from_slice(&val);
        let e = err(&r);
        assert!(e.contains("general.alignment") && e.contains(needle), "{e}");
    }
}

#[test]
fn duplicates_bad_utf8_and_bad_bools() {
    let mut r = Raw::new(3, 0, 2);
    r.str("k").u32(4).u32(1).str("k").u32(4).u32(2);
    assert!(err(&r).contains("duplicate metadata key 'k'"));
    let mut r = Raw::new(3, 2, 0);
    r.tensor("w", &[4], 0, 0).tensor("w", &[4], 0, 32).data(64);
    assert!(err(&r).contains("duplicate tensor name 'w'"));
    let mut r = Raw::new(3, 0, 1);
    r.bytes(&[0xff, 0xfe]).u32(4).u32(1);
    let e = err(&r);
    assert!(e.contains("UTF-8") && e.contains("offset 32"), "{e}");
    let mut r = Raw::new(3, 0, 1);
    r.str("b").u32(7).u8(2);
    let e = err(&r);
    assert!(e.contains("bool value 2") && e.contains("'b'"), "{e}");
}

#[test]
fn accessors_on_missing_names_are_errors() {
    let r = GgufReader::new(minimal().b).unwrap();
    for e in [
        r.tensor("nope").unwrap_err(),
        r.dequantize("nope").unwrap_err(),
        r.tensor_data("nope").unwrap_err(),
    ] {
        assert!(matches!(e, GgufError::TensorNotFound { .. }), "{e}");
    }
    assert!(r
        .metadata()
        .get_str("nope")
        .unwrap_err()
        .to_string()
        .contains("nope"));
}
