//! Reference timings from another library, run in a child process.
//!
//! `tools/bench_ref.py <pattern> --threads N` builds the pattern's
//! computation in numpy (GEMM, GEMV, elementwise) or JAX `jit` (MLP step,
//! FFN, attention, BERT layer), times it the same way as [`crate::time_iterations`]
//! (warm-up, then runs until a minimum count and time) and prints one JSON
//! line: `{"pattern", "library", "threads", "runs", "min_s", "median_s", "p99_s"}`.

use crate::BenchError;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A reference library's timing of one pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceTiming {
    /// Library and version that ran it (e.g. `numpy 2.3 (openblas)`).
    pub library: String,
    /// Timed runs.
    pub runs: usize,
    /// Fastest run.
    pub min: Duration,
    /// Median run.
    pub median: Duration,
    /// 99th-percentile run.
    pub p99: Duration,
}

/// Runs `python script pattern --threads threads` and reads its JSON line.
/// `Ok(None)` when the script has no reference for this pattern (exit code 3).
pub fn run_reference(
    python: &Path,
    script: &Path,
    pattern: &str,
    threads: usize,
) -> Result<Option<ReferenceTiming>, BenchError> {
    run_reference_with(python, script, pattern, threads, &[])
}

/// [`run_reference`] with extra arguments for the script (e.g.
/// `["--onnx", path]`).
pub fn run_reference_with(
    python: &Path,
    script: &Path,
    pattern: &str,
    threads: usize,
    extra: &[String],
) -> Result<Option<ReferenceTiming>, BenchError> {
    let fail = |message: String| BenchError::Reference {
        pattern: pattern.to_string(),
        message,
    };
    let out = Command::new(python)
        .arg(script)
        .arg(pattern)
        .arg("--threads")
        .arg(threads.to_string())
        .args(extra)
        .output()
        .map_err(|e| fail(format!("cannot run {}: {e}", python.display())))?;
    if out.status.code() == Some(3) {
        return Ok(None);
    }
    if !out.status.success() {
        return Err(fail(format!(
            "{} exited with {}: {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| fail(format!("no JSON line in output: {}", text.trim())))?;
    parse_timing(line).map(Some).map_err(fail)
}

/// Reads the JSON line `tools/bench_ref.py` prints.
pub fn parse_timing(line: &str) -> Result<ReferenceTiming, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("bad JSON {line:?}: {e}"))?;
    let secs = |key: &str| -> Result<Duration, String> {
        v[key]
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("field {key:?} missing or not a non-negative number in {line}"))
    };
    Ok(ReferenceTiming {
        library: v["library"].as_str().unwrap_or("unknown").to_string(),
        runs: v["runs"].as_u64().unwrap_or(0) as usize,
        min: secs("min_s")?,
        median: secs("median_s")?,
        p99: secs("p99_s")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_reference_line() {
        let t = parse_timing(
            r#"{"pattern": "matmul_512", "library": "numpy 2.3", "threads": 2, "runs": 40, "min_s": 0.001, "median_s": 0.002, "p99_s": 0.004}"#,
        )
        .unwrap();
        assert_eq!(t.library, "numpy 2.3");
        assert_eq!(t.runs, 40);
        assert_eq!(t.median, Duration::from_millis(2));
        let err = parse_timing(r#"{"min_s": 1, "median_s": -1, "p99_s": 1}"#).unwrap_err();
        assert!(err.contains("median_s"), "{err}");
        assert!(parse_timing("not json").is_err());
    }
}
