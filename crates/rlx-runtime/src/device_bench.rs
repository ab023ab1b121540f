//! [`benchmark_devices`]: compile and time a graph on each candidate
//! device, so the choice of device is measured, not guessed.

use crate::{CompileOptions, CompiledGraph, DeviceCandidate, Result, RuntimeError};
use rlx_ir::{Graph, HostTensor};
use std::time::Instant;

/// Values by name for every input and param of a graph: what a benchmark
/// or a measured pick runs with.
pub type Feeds<'a> = &'a [(&'a str, &'a HostTensor)];

/// How many runs a benchmark makes per candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchOptions {
    /// Untimed runs first (caches, lazily packed weights, thread wake-up).
    pub warmup: usize,
    /// Timed runs (at least one is made).
    pub runs: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            warmup: 3,
            runs: 20,
        }
    }
}

/// What one candidate measured: compile time and run-time statistics,
/// in milliseconds. Also the row type of `rlx bench`, which measures
/// runners that are not one compiled graph through [`DeviceBenchResult::measure`].
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceBenchResult {
    /// The device and its configuration.
    pub candidate: DeviceCandidate,
    /// The compile, params included.
    pub compile_ms: f64,
    /// Median of the timed runs.
    pub median_ms: f64,
    /// 90th percentile (nearest rank) of the timed runs.
    pub p90_ms: f64,
    /// 99th percentile (nearest rank) of the timed runs.
    pub p99_ms: f64,
    /// Mean of the timed runs.
    pub mean_ms: f64,
    /// Fastest timed run.
    pub min_ms: f64,
    /// Untimed runs made first.
    pub warmup: usize,
    /// Timed runs.
    pub runs: usize,
}

impl DeviceBenchResult {
    /// Calls `run` `bench.warmup` times untimed, then `bench.runs` times
    /// (at least once) timed, and summarises the timed calls. The first
    /// error a call returns is the result.
    ///
    /// ```
    /// use rlx_runtime::{BenchOptions, DeviceBenchResult, DeviceCandidate};
    /// let mut calls = 0;
    /// let bench = BenchOptions { warmup: 2, runs: 5 };
    /// let row = DeviceBenchResult::measure(DeviceCandidate::cpu_threads(1), 0.0, &bench, || {
    ///     calls += 1;
    ///     Ok::<(), String>(())
    /// })
    /// .unwrap();
    /// assert_eq!((calls, row.runs), (7, 5));
    /// assert!(row.min_ms <= row.median_ms && row.median_ms <= row.p99_ms);
    /// ```
    pub fn measure<E>(
        candidate: DeviceCandidate,
        compile_ms: f64,
        bench: &BenchOptions,
        mut run: impl FnMut() -> std::result::Result<(), E>,
    ) -> std::result::Result<DeviceBenchResult, E> {
        for _ in 0..bench.warmup {
            run()?;
        }
        let runs = bench.runs.max(1);
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            run()?;
            times.push(ms(t));
        }
        times.sort_by(f64::total_cmp);
        Ok(DeviceBenchResult {
            candidate,
            compile_ms,
            median_ms: median(&times),
            p90_ms: nearest_rank(&times, 0.90),
            p99_ms: nearest_rank(&times, 0.99),
            mean_ms: times.iter().sum::<f64>() / runs as f64,
            min_ms: times[0],
            warmup: bench.warmup,
            runs,
        })
    }

    /// The row with the lowest median (`None` for no rows).
    pub fn fastest(rows: &[DeviceBenchResult]) -> Option<&DeviceBenchResult> {
        rows.iter()
            .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms))
    }

    /// The row as JSON (device as its text form, e.g. `"cpu"`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "device": self.candidate.device.to_string(),
            "threads": self.candidate.threads,
            "candidate": self.candidate.to_string(),
            "compile_ms": self.compile_ms,
            "median_ms": self.median_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "mean_ms": self.mean_ms,
            "min_ms": self.min_ms,
            "warmup": self.warmup,
            "runs": self.runs,
        })
    }
}

/// Compiles and times `graph` on every available candidate
/// ([`DeviceCandidate::available`]: each device, and the CPU at one thread
/// as well as at every core) with default options and
/// [`BenchOptions::default`]. `feeds` give every input and param by name.
/// One row per candidate, in candidate order; the first failure is the error.
///
/// ```
/// use rlx_runtime::{benchmark_devices, DeviceCandidate};
/// use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
/// let mut g = Graph::new("scale");
/// let x = g.input("x", Shape::new(&[4], DType::F32));
/// let w = g.param("w", Shape::new(&[4], DType::F32));
/// let y = g.mul(x, w);
/// g.set_outputs(vec![y]);
/// let x = HostTensor::from_slice(&[1f32, 2.0, 3.0, 4.0], &[4]).unwrap();
/// let w = HostTensor::from_slice(&[2f32; 4], &[4]).unwrap();
/// let rows = benchmark_devices(&g, &[("x", &x), ("w", &w)]).unwrap();
/// assert_eq!(rows.len(), DeviceCandidate::available().len());
/// assert!(rows.iter().all(|r| r.median_ms <= r.p99_ms));
/// ```
pub fn benchmark_devices(graph: &Graph, feeds: Feeds<'_>) -> Result<Vec<DeviceBenchResult>> {
    benchmark_devices_with(
        graph,
        feeds,
        &DeviceCandidate::available(),
        &CompileOptions::default(),
        &BenchOptions::default(),
    )
}

/// [`benchmark_devices`] over `candidates`, compiled with `opts`.
pub fn benchmark_devices_with(
    graph: &Graph,
    feeds: Feeds<'_>,
    candidates: &[DeviceCandidate],
    opts: &CompileOptions,
    bench: &BenchOptions,
) -> Result<Vec<DeviceBenchResult>> {
    candidates
        .iter()
        .map(|&c| bench_one(graph, feeds, c, opts, bench))
        .collect()
}

/// [`benchmark_devices_with`], but every candidate gets its own result:
/// one that cannot compile or run the graph (an unavailable device, a
/// missing kernel) is an error in its row and the others are still measured.
pub fn benchmark_each(
    graph: &Graph,
    feeds: Feeds<'_>,
    candidates: &[DeviceCandidate],
    opts: &CompileOptions,
    bench: &BenchOptions,
) -> Vec<(DeviceCandidate, Result<DeviceBenchResult>)> {
    candidates
        .iter()
        .map(|&c| (c, bench_one(graph, feeds, c, opts, bench)))
        .collect()
}

fn bench_one(
    graph: &Graph,
    feeds: Feeds<'_>,
    candidate: DeviceCandidate,
    opts: &CompileOptions,
    bench: &BenchOptions,
) -> Result<DeviceBenchResult> {
    let start = Instant::now();
    let (mut compiled, inputs) = compile_fed(graph, feeds, candidate, opts)?;
    DeviceBenchResult::measure(candidate, ms(start), bench, || {
        compiled.try_run_typed(&inputs).map(drop)
    })
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Median of sorted, non-empty `t`.
fn median(t: &[f64]) -> f64 {
    let n = t.len();
    if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    }
}

/// The `q` quantile of sorted, non-empty `t` by nearest rank.
fn nearest_rank(t: &[f64], q: f64) -> f64 {
    let rank = (q * t.len() as f64).ceil() as usize;
    t[rank.clamp(1, t.len()) - 1]
}

/// Compiles `graph` for `candidate`, sets the params among `feeds`, and
/// returns the rest as the run's inputs. A name that is neither is an error.
pub(crate) fn compile_fed<'a>(
    graph: &Graph,
    feeds: Feeds<'a>,
    candidate: DeviceCandidate,
    opts: &CompileOptions,
) -> Result<(CompiledGraph, Vec<(&'a str, &'a HostTensor)>)> {
    let declared = |leaves: Vec<(rlx_ir::NodeId, &str, &rlx_ir::Shape)>| {
        leaves
            .into_iter()
            .map(|l| l.1.to_string())
            .collect::<Vec<String>>()
    };
    let (params, input_names) = (declared(graph.params()), declared(graph.inputs()));
    if let Some(&(name, _)) = feeds
        .iter()
        .find(|(n, _)| !params.iter().chain(&input_names).any(|k| k == n))
    {
        return Err(RuntimeError::UnknownInput {
            name: name.to_string(),
            known: input_names.iter().chain(&params).cloned().collect(),
        });
    }
    let mut compiled = candidate.compile(graph.clone(), opts)?;
    // A param no output needs is compiled away: nothing to set.
    let kept = compiled.param_names();
    let mut inputs = Vec::new();
    for &(name, value) in feeds {
        if kept.iter().any(|p| p == name) {
            compiled.set_param_typed(name, value)?;
        } else if input_names.iter().any(|i| i == name) {
            inputs.push((name, value));
        }
    }
    Ok((compiled, inputs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let t: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median(&t), 50.5);
        assert_eq!(nearest_rank(&t, 0.99), 99.0);
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(nearest_rank(&[3.0], 0.99), 3.0);
        assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 0.5), 2.0);
        // numpy.percentile(range(1, 11), q, method="inverted_cdf"): 90 -> 9, 99 -> 10.
        let t: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(nearest_rank(&t, 0.90), 9.0);
        assert_eq!(nearest_rank(&t, 0.99), 10.0);
    }
}
