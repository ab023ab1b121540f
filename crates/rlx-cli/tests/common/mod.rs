//! Helpers shared by the CLI tests: the binary, fixture paths, comparisons.
#![allow(dead_code)]

use assert_cmd::Command;
use rlx::{DType, HostTensor};
use std::path::PathBuf;

/// The built `rlx` binary.
pub fn rlx() -> Command {
    let mut c = Command::cargo_bin("rlx").unwrap();
    c.env_remove("RLX_DEVICE").env_remove("RLX_NUM_THREADS");
    c
}

/// A file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A file of another crate, relative to `crates/`.
pub fn crate_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
}

/// stdout of a successful run.
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON a successful run prints.
pub fn json_of(cmd: &mut Command) -> serde_json::Value {
    serde_json::from_str(&stdout_of(cmd)).unwrap()
}

/// Asserts a failed run's exit code and that stderr is one line holding `needle`.
pub fn assert_one_line_failure(cmd: &mut Command, code: i32, needle: &str) {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{cmd:?}: stderr {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err:?}"
    );
    assert!(err.contains(needle), "{needle:?} not in {err:?}");
}

/// Same dtype and dims; integers exact, floats within `rtol * |want| + atol`.
pub fn assert_close(got: &HostTensor, want: &HostTensor, rtol: f64, atol: f64, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.dims(), want.dims(), "{what}: dims");
    if matches!(want.dtype(), DType::F32 | DType::F64 | DType::F16) {
        for (i, (g, w)) in got
            .to_f64_lossy()
            .iter()
            .zip(want.to_f64_lossy())
            .enumerate()
        {
            assert!(
                (g - w).abs() <= rtol * w.abs() + atol,
                "{what}[{i}]: {g} vs {w}"
            );
        }
    } else {
        assert_eq!(got.bytes(), want.bytes(), "{what}: values");
    }
}
