//! The hostile corpus (`tools/gen_rlxp_hostile.py`): every package is
//! refused with the named error the manifest gives, in every
//! materialize mode, and a seeded mutation run never panics.

use rlx_pkg::format::checksum;
use rlx_pkg::{MaterializeMode, Package, PkgError};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rlxp")
}

fn check(err: &PkgError, kind: &str, contains: &str, file: &str, how: &str) {
    assert_eq!(err.kind(), kind, "{file} ({how}): {err}");
    let msg = err.to_string();
    assert!(
        msg.contains(contains),
        "{file} ({how}): message \"{msg}\" does not name \"{contains}\""
    );
}

#[test]
fn every_hostile_package_gets_its_named_error() {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("hostile.json")).unwrap())
            .unwrap();
    let cases = manifest.as_array().unwrap();
    assert!(cases.len() >= 40, "the corpus has {} cases", cases.len());
    let mut kinds = std::collections::BTreeSet::new();
    for c in cases {
        let file = c["file"].as_str().unwrap();
        let kind = c["error"].as_str().unwrap();
        let contains = c["contains"].as_str().unwrap();
        let at_verify = c["stage"].as_str().unwrap() == "verify";
        kinds.insert(kind);
        let path = fixtures().join("hostile").join(file);
        let bytes = std::fs::read(&path).unwrap();
        let mut opened = vec![("bytes", Package::from_bytes(bytes))];
        for mode in [
            MaterializeMode::Mmap,
            MaterializeMode::Copy,
            MaterializeMode::Lazy,
        ] {
            opened.push((
                match mode {
                    MaterializeMode::Mmap => "mmap",
                    MaterializeMode::Copy => "copy",
                    MaterializeMode::Lazy => "lazy",
                },
                Package::open_with(&path, mode),
            ));
        }
        for (how, r) in opened {
            match (at_verify, r) {
                (false, Ok(_)) => panic!("{file} ({how}) opened; expected {kind}"),
                (false, Err(e)) => check(&e, kind, contains, file, how),
                // Copy mode verifies what it copies at open.
                (true, Err(e)) if how == "copy" => check(&e, kind, contains, file, how),
                (true, Err(e)) => panic!("{file} ({how}) refused at open: {e}"),
                (true, Ok(p)) => {
                    let e = p.verify().expect_err(file);
                    check(&e, kind, contains, file, how);
                    // Reading the bad tensor directly is refused the same way.
                    let bad = p
                        .entries()
                        .iter()
                        .map(|t| t.name.clone())
                        .find(|n| p.tensor(n).is_err())
                        .expect("one tensor is unreadable");
                    check(&p.tensor(&bad).unwrap_err(), kind, contains, file, how);
                }
            }
        }
    }
    // Each check of docs/rlxp.md has a case.
    for k in [
        "Truncated",
        "BadMagic",
        "HeaderChecksum",
        "UnsupportedVersion",
        "UnsupportedFlags",
        "BadLayout",
        "LengthOverflow",
        "TocChecksum",
        "BadToc",
        "BadTensor",
        "DimsOverflow",
        "SizeMismatch",
        "Misaligned",
        "OutOfRange",
        "Overlap",
        "DuplicateName",
        "BadBlocks",
        "BadPlacement",
        "GraphParse",
        "GraphMismatch",
        "TensorChecksum",
        "Decompress",
    ] {
        assert!(kinds.contains(k), "no hostile case for {k}");
    }
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let e = Package::open("/nonexistent/model.rlxp").unwrap_err();
    check(&e, "Io", "/nonexistent/model.rlxp", "missing", "open");
}

/// Deterministic xorshift, so the run is the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Recomputes the TOC and header checksums of `b` (when its header is
/// whole and the TOC in range), so a mutation reaches the checks behind them.
fn refix(b: &mut [u8]) {
    if b.len() < 64 {
        return;
    }
    let toc_len = u64::from_le_bytes(b[24..32].try_into().unwrap());
    if let Some(end) = 64u64.checked_add(toc_len).filter(|&e| e <= b.len() as u64) {
        let sum = checksum(&b[64..end as usize]);
        b[48..56].copy_from_slice(&sum.to_le_bytes());
    }
    let sum = checksum(&b[0..56]);
    b[56..64].copy_from_slice(&sum.to_le_bytes());
}

/// A bounded, seeded fuzz run in the normal suite (the cargo-fuzz target in
/// fuzz/ explores further: tools/fuzz_rlxp.sh). Half of the mutants get
/// their checksums recomputed, so the TOC parser and span checks see them.
#[test]
fn five_thousand_mutations_never_panic() {
    let base = std::fs::read(fixtures().join("reference.rlxp")).unwrap();
    let toc_end = 64 + u64::from_le_bytes(base[24..32].try_into().unwrap()) as usize;
    let mut rng = Rng(0x005e_ed24);
    let (mut opened, mut refused) = (0, 0);
    let mut kinds = std::collections::BTreeSet::new();
    for i in 0..5000 {
        let mut b = base.clone();
        for _ in 0..1 + rng.below(3) {
            let span = if rng.below(4) == 0 {
                b.len()
            } else {
                toc_end.min(b.len())
            };
            let at = rng.below(span as u64) as usize;
            match rng.below(5) {
                0 => b[at] ^= 1 << rng.below(8),
                1 => b[at] = b"0123456789[],:\"{}"[rng.below(17) as usize],
                2 => b.truncate(at),
                3 => {
                    b.remove(at);
                }
                _ => b[at] = b"9e"[rng.below(2) as usize],
            }
            if b.is_empty() {
                break;
            }
        }
        if i % 2 == 0 {
            refix(&mut b);
        }
        match Package::from_bytes(b) {
            Ok(p) => {
                opened += 1;
                for name in p.tensor_names() {
                    if let Ok(t) = p.tensor(&name) {
                        assert_eq!(t.dims(), &p.entry(&name).unwrap().dims[..]);
                    }
                }
                let _ = p.verify();
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
                kinds.insert(e.kind());
            }
        }
    }
    assert!(
        opened > 0 && refused > 0,
        "opened {opened}, refused {refused}"
    );
    // The mutants reach past the checksums into the TOC, span and graph checks.
    assert!(kinds.len() >= 8, "only {kinds:?}");
    eprintln!("opened {opened}, refused {refused}: {kinds:?}");
}
