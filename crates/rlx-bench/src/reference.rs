//! Reference timings from another library, run in a child process.
//!
//! `tools/bench_ref.py <pattern> --threads N` builds the pattern's
//! computation in numpy (GEMM, GEMV, elementwise) or JAX `jit` (MLP step,
//! FFN, attention, BERT layer), times it the same way as [`crate::time_iterations`]
//! (warm-up, then runs until a minimum count and time) and prints one JSON
//! line: `{"pattern", "library", "threads", "runs", "min_s", "median_s", "p99_s"}`.
//!
//! A [`ReferenceServer`] keeps that process alive (`--serve`) and asks it
//! for one timed batch at a time, so RLX's and the reference's batches can
//! alternate every fraction of a second.

use crate::BenchError;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
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
    let fail = failure(pattern);
    let out = script_command(python, script, pattern, threads, extra)
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

/// A reference process serving timed batches of one pattern
/// (`tools/bench_ref.py --serve`), built and warmed up once.
pub struct ReferenceServer {
    pattern: String,
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// Reads the process's stderr as it comes (a full pipe would stall a
    /// chatty reference, e.g. JAX's warnings) and returns it at the end.
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl ReferenceServer {
    /// Starts the script in serve mode and waits until it has built and
    /// warmed up the pattern. `Ok(None)` when it has no reference for it.
    pub fn start(
        python: &Path,
        script: &Path,
        pattern: &str,
        threads: usize,
        extra: &[String],
    ) -> Result<Option<ReferenceServer>, BenchError> {
        let fail = failure(pattern);
        let mut child = script_command(python, script, pattern, threads, extra)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("cannot run {}: {e}", python.display())))?;
        let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(input), Some(output), Some(mut errors)) = pipes else {
            return Err(fail("no pipes to the reference process".into()));
        };
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut errors, &mut text);
            text
        });
        let mut server = ReferenceServer {
            pattern: pattern.to_string(),
            child,
            input,
            output: BufReader::new(output),
            stderr: Some(stderr),
        };
        match server.read_line() {
            Ok(line) if is_ready_line(&line) => Ok(Some(server)),
            Ok(line) => Err(fail(format!("expected the ready line, got {line:?}"))),
            Err(message) => {
                let status = server.child.wait().ok();
                if status.and_then(|s| s.code()) == Some(3) {
                    return Ok(None);
                }
                let stderr = server.stderr.take().and_then(|h| h.join().ok());
                let stderr = stderr.unwrap_or_default();
                Err(fail(format!("{message}: {}", stderr.trim())))
            }
        }
    }

    /// One batch: at least `min_runs` runs and `min_time`, timed by the
    /// reference process.
    pub fn batch(
        &mut self,
        min_runs: usize,
        min_time: Duration,
    ) -> Result<ReferenceTiming, BenchError> {
        let timing = writeln!(self.input, "{} {}", min_runs, min_time.as_secs_f64())
            .and_then(|()| self.input.flush())
            .map_err(|e| format!("cannot write to the reference process: {e}"))
            .and_then(|()| self.read_line())
            .and_then(|line| parse_timing(&line));
        timing.map_err(failure(&self.pattern))
    }

    fn read_line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) => Err("the reference process closed its output".into()),
            Ok(_) => Ok(line.trim().to_string()),
            Err(e) => Err(format!("cannot read from the reference process: {e}")),
        }
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        // The serve loop keeps nothing worth a clean exit.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(h) = self.stderr.take() {
            let _ = h.join();
        }
    }
}

/// `python script pattern --threads threads extra..`.
fn script_command(
    python: &Path,
    script: &Path,
    pattern: &str,
    threads: usize,
    extra: &[String],
) -> Command {
    let mut command = Command::new(python);
    command
        .arg(script)
        .arg(pattern)
        .arg("--threads")
        .arg(threads.to_string())
        .args(extra);
    command
}

/// The error of `pattern`'s reference, with a message.
fn failure(pattern: &str) -> impl Fn(String) -> BenchError + '_ {
    move |message| BenchError::Reference {
        pattern: pattern.to_string(),
        message,
    }
}

/// Whether `line` is the serve mode's `{"ready": true, ...}` line.
fn is_ready_line(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v["ready"] == true)
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

    /// A stand-in for `bench_ref.py --serve` run by `sh` (the tests need no
    /// Python): `body` is the script.
    fn serve_with(body: &str, name: &str) -> Result<Option<ReferenceServer>, BenchError> {
        let script =
            std::env::temp_dir().join(format!("rlx_bench_{name}_{}.sh", std::process::id()));
        std::fs::write(&script, body).unwrap();
        let server = ReferenceServer::start(Path::new("/bin/sh"), &script, "p", 1, &[]);
        let _ = std::fs::remove_file(&script);
        server
    }

    #[test]
    fn server_answers_batches_and_reports_no_reference() {
        let ready = r#"echo '{"pattern": "p", "library": "fake", "threads": 1, "ready": true}'"#;
        let answer = r#"while read runs secs; do echo "{\"library\": \"fake\", \"runs\": $runs, \"min_s\": 0.5, \"median_s\": 1, \"p99_s\": 2}"; done"#;
        // 200 KB of warnings on stderr first: more than a pipe holds.
        let chatty = "i=0; while [ $i -lt 2000 ]; do echo 'a warning line of about one hundred characters, repeated to fill the stderr pipe' >&2; i=$((i+1)); done";
        let mut s = serve_with(&format!("{chatty}\n{ready}\n{answer}\n"), "ok")
            .unwrap()
            .expect("a server");
        let t = s.batch(7, Duration::from_millis(10)).unwrap();
        assert_eq!((t.runs, t.median), (7, Duration::from_secs(1)));
        assert_eq!(s.batch(3, Duration::ZERO).unwrap().runs, 3);

        assert!(serve_with("exit 3\n", "none").unwrap().is_none());
        let err = serve_with("echo oops >&2; exit 1\n", "fails")
            .err()
            .expect("an error");
        assert!(err.to_string().contains("oops"), "{err}");
        let err = serve_with("echo '{}'\n", "noready")
            .err()
            .expect("an error");
        assert!(err.to_string().contains("ready"), "{err}");
    }

    #[test]
    fn tells_the_ready_line() {
        assert!(is_ready_line(
            r#"{"pattern": "matmul_512", "library": "numpy", "threads": 1, "ready": true}"#
        ));
        assert!(!is_ready_line(
            r#"{"runs": 3, "min_s": 0.1, "median_s": 0.1, "p99_s": 0.1}"#
        ));
        assert!(!is_ready_line("no reference for x"));
    }
}
